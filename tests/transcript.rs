//! Integration tests: transcript.
