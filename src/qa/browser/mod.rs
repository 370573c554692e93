//! The `browser` and `ac_predicates` checks, run in a real headless Chromium driven over `DevTools`.
//!
//! One browser per QA run, started lazily, serving the artifacts from an ephemeral loopback
//! server; every page call has its own deadline and the browser's whole process group is killed
//! and reaped on every exit path.

pub mod acceptance;
pub mod boot;
pub mod canvas;
pub mod input;
pub mod launch;
pub mod locate;
pub mod observe;
pub mod page_ops;
pub mod reap;
pub mod server;
pub mod settle;
pub mod smoke;
