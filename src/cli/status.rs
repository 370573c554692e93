//! `crumb status`.

use std::process::ExitCode;

/// Arguments of `crumb status`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb status: not implemented yet");
    ExitCode::from(2)
}
