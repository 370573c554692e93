//! The file system as the rest of the crate reads it: bounded reads of regular files, paths kept
//! inside their folder, and the real files the core's compiler reads through
//! ([`source_files::FsSource`]). The core itself never touches the file system.

pub(crate) mod bounded_read;
pub(crate) mod confine;
pub(crate) mod recorded_reads;
pub(crate) mod source_files;
pub(crate) mod stdout;

pub use source_files::{FsSource, real_files};
