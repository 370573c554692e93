//! `crumb run <pipeline> <pitch>`, one way through: the arguments (`args`) become a plan once
//! (`plan`: the pipeline compiled, the bindings resolved, the inputs checked, the goal read),
//! the plan becomes a session (`open`), the session is driven (`drive`) and summarised
//! (`summary`). A dry run (`dry`) plays the same plan by a script instead of driving it.
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
mod telemetry;
pub(crate) mod timings;
mod verdict;

pub(crate) use args::{Args, DriveArgs};

use crate::cli::error::{CommandError, ExitStatus};

/// `crumb run`: plan, then a dry run, or a session opened and driven.
pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    if args.watch {
        let home = super::home_flag::resolve(args.drive.home.as_deref())?;
        return super::watch::run_and_watch(&home);
    }
    let plan = plan::Plan::from_args(args)?;
    if args.dry.dry_run {
        return dry::run(&plan, &args.dry, args.drive.json);
    }
    let opened = open::open(plan, args.new, args.drive.json)?;
    drive::drive_and_report(opened.session, opened.lock, &args.drive)
}

#[cfg(test)]
mod tests {
    /// The files of `crumb run` and what they say, to count the calls that compile or resolve.
    const FILES: &[(&str, &str)] = &[
        ("args.rs", include_str!("args.rs")),
        ("drive.rs", include_str!("drive.rs")),
        ("dry.rs", include_str!("dry.rs")),
        ("inputs.rs", include_str!("inputs.rs")),
        ("mod.rs", include_str!("mod.rs")),
        ("open.rs", include_str!("open.rs")),
        ("pitch.rs", include_str!("pitch.rs")),
        ("plan.rs", include_str!("plan.rs")),
        ("progress.rs", include_str!("progress.rs")),
        ("studio_link.rs", include_str!("studio_link.rs")),
        ("summary.rs", include_str!("summary.rs")),
        ("telemetry.rs", include_str!("telemetry.rs")),
        ("verdict.rs", include_str!("verdict.rs")),
    ];

    /// Where `name(` is called (the name is given without its parenthesis, so this test's own
    /// text does not count).
    fn calls(name: &str) -> Vec<(&'static str, usize)> {
        let needle = format!("{name}(");
        FILES
            .iter()
            .map(|(file, text)| (*file, text.matches(&needle).count()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// A run compiles its pipeline once and resolves its bindings once, both in the plan: no
    /// later step (the new session, a take-over, a dry run) compiles the frozen copy again or
    /// resolves against it. The one other compile is `reopen`'s, for `crumb resume`, which has
    /// no plan, only the session's frozen copy. (Creating the session compiles nothing either: it
    /// freezes what the plan's compile read and writes the plan's table's authority.)
    #[test]
    fn only_the_plan_compiles_and_resolves() {
        let compile = [
            "compile_recording",
            "compile_or_report",
            "compile_frozen",
            "compile_file",
            ".table",
        ];
        let compiled: Vec<_> = compile.iter().flat_map(|name| calls(name)).collect();
        assert_eq!(
            compiled,
            [("plan.rs", 1), ("open.rs", 1)],
            "compiles: {compiled:?}"
        );
        let resolved = calls("bindings::resolve");
        assert_eq!(resolved, [("plan.rs", 1)], "resolves: {resolved:?}");
        let reopened = calls("reopen");
        assert_eq!(
            reopened,
            [("open.rs", 1)],
            "only resume reopens: {reopened:?}"
        );
    }
}
