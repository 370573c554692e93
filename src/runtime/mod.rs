//! The runtime: sessions on disk, bindings, inbox, process spawning, coordinator and dispatcher. Everything here may do I/O.

pub mod authority;
pub mod bindings;
pub mod coordinator;
pub mod dead_session;
pub mod dispatcher;
pub mod fork;
pub mod freeze;
pub mod home;
pub mod inbox;
pub mod listing;
pub mod lock;
pub mod meta;
pub mod orphans;
pub mod outputs;
pub mod prompt;
pub mod resolve;
pub mod run_config;
pub mod session;
pub mod session_dir;
pub mod state_snapshot;
pub mod status_fold;
pub mod stream_tap;
