//! `crumb explain`.

use std::process::ExitCode;

/// Arguments of `crumb explain`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb explain: not implemented yet");
    ExitCode::from(2)
}
