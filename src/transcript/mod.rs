//! The transcript on disk: the core's format ([`crumb_core::transcript`]) plus the locked appender
//! and the live tail, which need the file system and the clock.

pub use crumb_core::transcript::*;

pub mod chunked;
pub mod tail;
pub mod writer;
