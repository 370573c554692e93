//! `crumb qa`.

use std::process::ExitCode;

/// Arguments of `crumb qa`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb qa: not implemented yet");
    ExitCode::from(2)
}
