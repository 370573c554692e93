//! The pure engine: state, reducer, effects, guards. No I/O, clock, randomness or environment.
//!
//! [`reduce`] folds one event into a state and returns the effects the runtime must carry out.
//! Replay uses [`State::apply`], the same code path without the clone.

pub mod ask;
mod commands;
pub mod effect;
pub mod explore;
pub mod fold_snapshot;
pub mod guards;
pub mod reducer;
pub mod replay;
pub mod state;
pub mod story;
pub mod why;

pub use effect::{Effect, Feedback, Intervention, SpawnCause};
pub use reducer::reduce;
pub use replay::Replay;
pub use state::State;

#[cfg(test)]
mod conformance;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod route_budget;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
