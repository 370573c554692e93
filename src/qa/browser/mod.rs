//! The `browser` and `ac_predicates` checks, run in a real headless Chromium driven over `DevTools`.
//!
//! One browser per QA run, started lazily, serving the artifacts from an ephemeral loopback
//! server; every page call has its own deadline and the browser's whole process group is killed
//! and reaped on every exit path.

pub(crate) mod acceptance;
pub(crate) mod boot;
pub(crate) mod canvas;
pub(crate) mod clock;
pub(crate) mod input;
pub mod launch;
pub mod locate;
pub(crate) mod observe;
pub(crate) mod page_ops;
pub(crate) mod profile;
pub(crate) mod server;
pub(crate) mod settle;
pub(crate) mod smoke;
