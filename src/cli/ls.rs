//! `crumb ls`.

use std::process::ExitCode;

/// Arguments of `crumb ls`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> ExitCode {
    eprintln!("crumb ls: not implemented yet");
    ExitCode::from(2)
}
