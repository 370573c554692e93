//! `crumb say`.

use std::process::ExitCode;

/// Arguments of `crumb say`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb say: not implemented yet");
    ExitCode::from(2)
}
