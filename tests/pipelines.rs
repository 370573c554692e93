//! Integration tests: pipelines.
