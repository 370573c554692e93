//! `crumb schema`.

use std::process::ExitCode;

/// Arguments of `crumb schema`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb schema: not implemented yet");
    ExitCode::from(2)
}
