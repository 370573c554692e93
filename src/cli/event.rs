//! `crumb event`.

use std::process::ExitCode;

/// Arguments of `crumb event`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb event: not implemented yet");
    ExitCode::from(2)
}
