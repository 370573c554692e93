//! Integration tests: runtime.
