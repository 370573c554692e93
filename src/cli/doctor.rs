//! `crumb doctor`: check this machine before a long run (agent CLIs and their logins, Chromium,
//! the crumb home, the shared limits). Exit 0 when a default run can work, 1 otherwise.

use super::error::{CommandError, ErrorKind, ExitStatus};
use super::stdout;
use crate::runtime::bindings::Environment;
use std::path::PathBuf;

/// Arguments of `crumb doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check this preset's bindings (a name in `presets/`, or a path to a preset file): the
    /// base URLs they name answer, the key variables are set, and only the CLIs they use without
    /// a base URL need a vendor login.
    #[arg(long, value_name = "NAME|PATH")]
    pub preset: Option<String>,
    /// Crumb home to check (default: `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long)]
    pub home: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.home.as_deref()).map_err(|_| {
        CommandError::usage("no crumb home: set CRUMB_HOME or HOME, or pass --home")
    })?;
    let preset = args
        .preset
        .as_deref()
        .map(|name| {
            let dirs = [std::path::PathBuf::from("presets")];
            crate::runtime::bindings::files::load_preset(name, &dirs)
                .map_err(|err| CommandError::usage(err.to_string()))
        })
        .transpose()?;
    let report = crate::doctor::run(
        &Environment::from_process(),
        home.root(),
        preset
            .as_ref()
            .map(|(preset, path)| (preset, path.as_path())),
    );
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(CommandError::failure_from)? + "\n"
    } else {
        crate::doctor::render(&report)
    };
    stdout::print(text)?;
    if report.ok {
        Ok(ExitStatus::SUCCESS)
    } else {
        Err(CommandError::reported(ErrorKind::Failure))
    }
}
