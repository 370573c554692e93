//! The built-in deterministic `mock` adapter.

pub mod agent;
pub mod game;
pub mod scenario;

pub use scenario::Scenario;
