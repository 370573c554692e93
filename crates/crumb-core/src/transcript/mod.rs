//! The transcript format: event envelope, kinds, parsing (strict, borrowed fast path, legacy
//! mapping), the one line framer, the duplicate-id rule and the streaming reader. It depends on
//! nothing above it (no engine, no pipeline) and opens no file: opening, writing and tailing files
//! live in the `crumb` crate.
//!
//! A transcript is an append-only JSONL file, one [`Event`] a line, and the only source of a
//! session's state.

pub mod borrowed_line;
pub mod clip;
pub mod event;
pub mod event_kind;
pub mod event_metadata;
pub mod framer;
pub mod legacy;
pub mod legacy_scores;
pub mod parse;
pub mod payload;
pub mod recent_ids;
pub mod scan;
pub mod scores;

pub use event::{ArtifactRef, ArtifactRole, Data, Draft, Event, Step};
pub use event_kind::declared::DeclaredKind;
pub use event_kind::{Kind, explain};
pub use event_metadata::{Metadata, Visibility};
pub use scores::{Deviation, Dimension, ScoreSource, Scores};
pub mod reader;
pub mod schema;
pub mod timestamp;
pub mod validate;
pub mod violation;
