//! Integration tests: qa.
