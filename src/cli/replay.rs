//! `crumb replay`.

use std::process::ExitCode;

/// Arguments of `crumb replay`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb replay: not implemented yet");
    ExitCode::from(2)
}
