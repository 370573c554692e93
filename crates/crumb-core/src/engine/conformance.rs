//! Conformance suite: the engine's behaviour scenario by scenario (numbered C1–C26 in the test
//! names), one test per verdict × severity cell and per stop reason, against the casual
//! pipeline's table.

#![allow(
    clippy::float_cmp,
    reason = "scores are rounded to 4 decimals; exact values are the point"
)]

use crate::transcript::Metadata;

mod authority;
mod commands;
mod declared;
mod routes;
mod stops;

/// The metadata of an agent turn that used `tokens` input tokens.
fn usage(tokens: u64) -> Metadata {
    Metadata {
        tokens_in: Some(tokens),
        tokens_out: Some(0),
        ..Metadata::default()
    }
}
