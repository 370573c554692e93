//! crumb's pure core: everything that decides, nothing that acts.
//!
//! The event vocabulary ([`vocab`]), the transcript format ([`transcript`]), pipeline files and
//! their compiler ([`pipeline`]) and the engine ([`engine`]): a reducer that folds transcript events
//! through a compiled [`pipeline::table::TransitionTable`] into state and effects. This crate has no
//! async runtime, process, signal or browser code, no clock and no id generator in its
//! dependencies, so the compiler keeps the engine from doing I/O, reading the time or drawing
//! random numbers; `clippy.toml` disallows `std::fs`, `std::env`, `std::process`, the clocks and
//! `std::net` besides, and the files the pipeline compiler reads come in through
//! [`pipeline::source::SourceFiles`]. The `crumb` crate carries the effects out.

#![deny(unreachable_pub)]
// Docs are built with `--document-private-items` (`make lint`), where links to crate-private
// items resolve: they are the map of the code for contributors.
#![allow(rustdoc::private_intra_doc_links)]

pub mod digest;
pub mod engine;
pub mod pipeline;
pub mod transcript;
pub mod vocab;
