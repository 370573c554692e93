//! `crumb doctor`: check this machine before a long run (agent CLIs and their logins, Chromium,
//! the crumb home, the shared limits). Exit 0 when a default run can work, 1 otherwise.

use std::path::PathBuf;
use std::process::ExitCode;

use super::output;
use crate::exit_codes::{FAILURE, USAGE_ERROR, exit};
use crate::runtime::bindings::Environment;

/// Arguments of `crumb doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Crumb home to check (default: `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long)]
    pub home: Option<PathBuf>,
}

pub fn run(args: &Args) -> ExitCode {
    let Ok(home) = super::run::home(args.home.as_deref()) else {
        eprintln!("crumb doctor: no crumb home: set CRUMB_HOME or HOME, or pass --home");
        return exit(USAGE_ERROR);
    };
    let report = crate::doctor::run(&Environment::from_process(), home.root());
    let text = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => json + "\n",
            Err(err) => {
                eprintln!("crumb doctor: {err}");
                return exit(FAILURE);
            }
        }
    } else {
        crate::doctor::render(&report)
    };
    let printed = output::print(text, "doctor");
    if report.ok { printed } else { exit(FAILURE) }
}
