//! crumb: a declarative pipeline runner.
//!
//! A pipeline (roles, prompt templates, verdict routing, QA checks, limits) is declared in YAML,
//! validated, and compiled into a [`pipeline::table::TransitionTable`]. A pure reducer
//! ([`engine`]) folds the append-only JSONL transcript ([`transcript`]) through that table into
//! state and effects; everything that touches the world lives outside the engine.

#![deny(unreachable_pub)]
// The crate's docs are built with `--document-private-items` (`make lint`): they are the map of
// the code for contributors, where a link to a crate-private item resolves.
#![allow(rustdoc::private_intra_doc_links)]

pub mod adapters;
pub(crate) mod batch;
pub mod cli;
pub(crate) mod doctor;
pub mod exit_codes;
pub(crate) mod export;
pub mod fs;
pub mod home;
pub(crate) mod lsp;
pub(crate) mod mcp;
pub mod process;
pub mod qa;
pub mod runtime;
pub mod studio;
pub mod transcript;

pub use crumb_core::{engine, pipeline, vocab};
