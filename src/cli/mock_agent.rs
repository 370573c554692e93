//! `crumb mock-agent` (hidden): the mock adapter's agent process. The dispatcher runs it like any
//! agent CLI; people never call it directly.

use std::process::ExitCode;

/// Arguments of `crumb mock-agent` (none: everything comes from the `CRUMB_*` environment).
#[derive(Debug, clap::Args)]
pub struct Args {}

pub(crate) fn run(_args: &Args) -> ExitCode {
    crate::adapters::mock::agent::run()
}
