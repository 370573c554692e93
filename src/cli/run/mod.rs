//! `crumb run <pipeline> <pitch>`, one way through: the arguments ([`args`]) become a plan once
//! ([`plan`]: the pipeline compiled, the bindings resolved, the inputs checked, the goal read),
//! the plan becomes a session ([`open`]), the session is driven ([`drive`]) and summarised
//! ([`summary`]). A dry run ([`dry`]) plays the same plan by a script instead of driving it.
//!
//! Exit codes ([`crate::exit_codes`]) follow the session's outcome: `SUCCESS` pass, `FAILED`,
//! `PARTIAL`, `REJECTED`, `STOPPED` (budget, limit, circuit, idle); `AWAITING_PERSON`
//! (`crumb say <id> /approve` then `crumb resume <id>`), `INTERRUPTED`, `INVALID_PIPELINE`,
//! `USAGE_ERROR`, `FAILURE` (internal error).

mod args;
pub(crate) mod drive;
mod dry;
pub(crate) mod inputs;
pub(crate) mod open;
mod pitch;
mod plan;
mod progress;
mod studio_link;
mod summary;
mod verdict;

pub use args::{Args, DryRunArgs};

use crate::cli::error::{CommandError, ExitStatus};

/// `crumb run`: plan, then a dry run, or a session opened and driven.
pub fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let plan = plan::Plan::from_args(args)?;
    if args.dry.dry_run {
        return dry::run(&plan, &args.dry, args.json);
    }
    let opened = open::open(plan, args)?;
    drive::drive_and_report(opened.session, opened.lock, args.wait, args.json)
}
