//! The artifact store: every file an event records kept once by content, so a session's
//! `artifacts/` tree can be rebuilt as it was after any event (forks, releases, diffs). QA and
//! the preview keep reading `artifacts/`; replay never reads the store.

pub(crate) mod health;
pub(crate) mod objects;
pub(crate) mod tree;

/// The store cap when a session records none (`limits.max_store_mb`'s default).
pub(crate) const DEFAULT_CAP_MB: u64 = 256;
