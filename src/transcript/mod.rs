//! The transcript: event envelope, writer, reader and tail.
//!
//! A transcript is an append-only JSONL file, one [`Event`] a line, and the only source of a
//! session's state.

pub mod event;
pub mod kind;
pub mod metadata;
pub mod scores;

pub use event::{ArtifactRef, ArtifactRole, Data, Draft, Event, Step};
pub use kind::{Kind, explain};
pub use metadata::{Metadata, Visibility};
pub use scores::{Deviation, Dimension, ScoreSource, Scores};
pub mod reader;
pub mod schema;
pub mod tail;
pub mod validate;
pub mod writer;
