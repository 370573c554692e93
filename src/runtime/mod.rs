//! The runtime: sessions on disk, bindings, inbox, process spawning, coordinator and dispatcher. Everything here may do I/O.

pub(crate) mod authority_record;
pub(crate) mod bindings;
pub mod capability;
pub mod coordinator;
pub(crate) mod dead_session;
pub(crate) mod dispatcher;
pub(crate) mod fork;
pub(crate) mod freeze;
pub mod inbox;
pub(crate) mod limits;
pub(crate) mod listing;
pub mod lock;
pub mod meta;
pub(crate) mod orphans;
pub(crate) mod outputs;
pub(crate) mod prompt;
pub(crate) mod resolve;
pub mod run_config;
pub mod session;
pub mod session_dir;
pub mod session_read;
pub(crate) mod standalone_qa;
pub(crate) mod state_snapshot;
pub(crate) mod status_fold;
pub(crate) mod stop;
pub(crate) mod stream_tap;
