//! `crumb resume <session>`: take over a session whose coordinator stopped (it waited for a
//! person, or it was killed), replay it, re-issue exactly the effects that have no outcome yet,
//! apply new inbox lines, and drive it on. Same exit codes as `crumb run`.

use super::error::{CommandError, ExitStatus};
use super::run::drive::drive_and_report;
use super::run::open::{print_resumed_header, reopen};
use crate::home::Project;
use crate::runtime::lock::CoordinatorLock;
use crate::runtime::resolve::resolve;

/// Arguments of `crumb resume`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: as `crumb run`, following the outcome (0 pass, 20 fail, 21 partial, 22 rejected, 23 stopped by a budget, limit or breaker; 10 awaiting a person, 130 interrupted, 2 usage, 1 internal)."
)]
pub struct Args {
    /// A session id, a unique prefix of one, or a session folder.
    pub session: String,
    #[command(flatten)]
    pub drive: super::run::DriveArgs,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.drive.home.as_deref())?;
    let project = Project::current().ok();
    let dir = resolve(&home, project.as_ref(), &args.session)?;
    let lock = CoordinatorLock::acquire(dir.path())?;
    let session = reopen(&dir)?;
    if !args.drive.json {
        print_resumed_header(&dir);
    }
    drive_and_report(session, lock, &args.drive)
}
