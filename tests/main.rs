//! The one integration-test binary. Each module tests one area against the real `crumb` binary,
//! real files and real subprocesses.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

#[macro_use]
mod support;

mod agents;
mod architecture;
mod batch;
mod batch_job;
mod check;
mod cli_errors;
mod code_pipeline;
mod command_adapter;
mod declared;
mod docs;
mod doctor;
mod dry_run;
mod engine;
mod exit_codes;
mod export;
mod fork;
mod full_stdout;
mod hostile_agents;
mod init;
mod lsp;
mod mcp;
mod otlp_live;
mod pipelines;
mod qa;
mod research_pipeline;
mod run;
mod runtime;
mod same_fold;
mod shutdown;
mod status_snapshot;
mod store;
mod studio;
mod tail;
mod transcript;
mod watch;
mod why;
