//! The transcript: event envelope, writer, reader and tail.
