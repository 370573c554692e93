//! `crumb validate`.

use std::process::ExitCode;

/// Arguments of `crumb validate`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb validate: not implemented yet");
    ExitCode::from(2)
}
