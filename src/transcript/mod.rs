//! The transcript on disk: the core's format ([`crumb_core::transcript`]) plus what needs the file
//! system and the clock — opening a transcript to read it, the chunked parallel reader, the
//! locked appender and the live tail. Every reader here cuts lines with the core's one framer
//! ([`crumb_core::transcript::framer`]).

pub use crumb_core::transcript::*;

pub(crate) mod chunked;
pub(crate) mod end;
pub mod reader;
pub mod tail;
pub mod writer;
