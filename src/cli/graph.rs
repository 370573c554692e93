//! `crumb graph`.

use std::process::ExitCode;

/// Arguments of `crumb graph`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb graph: not implemented yet");
    ExitCode::from(2)
}
