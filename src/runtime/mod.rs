//! The runtime: sessions on disk, bindings, inbox, process spawning, coordinator and dispatcher. Everything here may do I/O.

pub mod freeze;
pub mod home;
pub mod listing;
pub mod lock;
pub mod meta;
pub mod resolve;
pub mod session;
pub mod inbox;
pub mod bindings;
pub mod agent_process;
pub mod coordinator;
pub mod dispatcher;
pub mod prompt;
pub mod run;
pub mod process;
