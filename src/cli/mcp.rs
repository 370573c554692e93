//! `crumb mcp`: serve the Model Context Protocol on stdio for an agent host, scoped to one crumb
//! home and one project; `--print-config HOST` prints the snippet that host needs instead.

use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use super::mcp_hosts::{Host, snippet};
use crate::home::Project;

/// Arguments of `crumb mcp`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the configuration snippet for this host and exit.
    #[arg(long, value_enum, value_name = "HOST")]
    pub print_config: Option<Host>,
    /// The project to serve (default: the one containing the working directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The crumb home (default `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let dir = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(CommandError::usage_from)?,
    };
    let project = Project::containing(&dir).map_err(|e| {
        CommandError::usage(format!("cannot open the project {}", dir.display())).because(e)
    })?;
    if let Some(host) = args.print_config {
        let exe = std::env::current_exe().map_err(CommandError::failure_from)?;
        super::stdout::print(snippet(host, &exe, &project.root))?;
        return Ok(ExitStatus::SUCCESS);
    }
    let home = super::home_flag::resolve(args.home.as_deref())?;
    crate::mcp::serve(home, project).map_err(CommandError::failure)?;
    Ok(ExitStatus::SUCCESS)
}
