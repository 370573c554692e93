//! Adapters: how each agent CLI (and the built-in mock) is run and how its structured output is read.

pub mod kind;
pub mod mock;

pub use kind::{AdapterKind, UnknownAdapter};
