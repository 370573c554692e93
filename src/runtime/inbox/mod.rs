//! The inbox: `<session>/inbox.txt`, one command or message per line, written by people
//! (`crumb say`, Studio) and read by the coordinator, which turns each line into a `user.*` event.
//!
//! - [`command`]: the grammar, parsed into a typed [`UserCommand`] against the pipeline's roles;
//! - [`draft`]: a command as the `user.*` event draft the coordinator appends;
//! - [`reader`]: whole lines appended after a byte offset (the offset is stored in each event, so a
//!   resumed coordinator never applies a line twice);
//! - [`append`]: appending one whole line under a lock.

pub mod append;
pub(crate) mod command;
pub(crate) mod draft;
pub mod reader;

pub(crate) use append::append_line;
pub use command::{AskTopic, CircuitTarget, InboxError, UserCommand, parse_line};
pub use draft::{consumed_offset, rejection_draft, to_draft};
pub use reader::{InboxLine, ReadError, read_after};
