//! Conformance suite: the engine's behaviour scenario by scenario (numbered C1–C26 in the test
//! names), one test per verdict × severity cell and per stop reason, against the casual
//! pipeline's table.

#![allow(
    clippy::float_cmp,
    reason = "scores are rounded to 4 decimals; exact values are the point"
)]

use crate::transcript::Metadata;

mod budgets;
mod commands;
mod declared;
mod fatal;
mod forged_events;
mod kinds;
mod outcomes;
mod parallel;
mod person;
mod qa_error;
mod routes;
mod stops;

/// The casual table without one of its guards.
fn without_guard(
    guard: crate::pipeline::choices::Guard,
) -> crate::pipeline::table::TransitionTable {
    let mut table = crate::engine::testkit::casual();
    table.scoring.guards.retain(|g| *g != guard);
    // casual.yaml declares its rubric: drop the property the guard acted on, as a pipeline
    // without the guard would have to.
    for dim in &mut table.scoring.rubric {
        use crate::pipeline::choices::Guard;
        use crate::pipeline::rubric::DimensionSource;
        match guard {
            Guard::ExecFromQa if dim.source == DimensionSource::Qa => {
                dim.source = DimensionSource::Judge;
            }
            Guard::ReworkCapsConvergence if dim.source == DimensionSource::Rework => {
                dim.source = DimensionSource::Judge;
            }
            Guard::AcFailureCapsSpecFit => dim.ac_failure_cap = None,
            Guard::SameProviderDiscount => dim.same_provider_discount = None,
            _ => {}
        }
    }
    table
}

/// The casual table with `fallback` as the builder's fallback adapter (the shipped file has none).
fn with_builder_fallback(fallback: &str) -> crate::pipeline::table::TransitionTable {
    let mut table = crate::engine::testkit::casual();
    for role in &mut table.roles {
        if role.id == "builder" {
            role.fallback = vec![fallback.to_owned()];
        }
    }
    table
}

/// The metadata of an agent turn that used `tokens` input tokens.
fn usage(tokens: u64) -> Metadata {
    Metadata {
        tokens_in: Some(tokens),
        tokens_out: Some(0),
        ..Metadata::default()
    }
}
