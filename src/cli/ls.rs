//! `crumb ls`: the sessions of this project (or of every project), newest first.

use super::error::{CommandError, ExitStatus};
use super::stdout;
use crate::home::{CrumbHome, Project};
use crate::runtime::listing::{self, SessionSummary};
use std::io::Write;

/// Longest goal shown in the table; `--json` always has the whole goal.
const GOAL_WIDTH: usize = 60;

/// Arguments of `crumb ls`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
    /// List the sessions of every project, not only the one containing the working directory.
    #[arg(long)]
    pub all_projects: bool,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = CrumbHome::from_env()?;
    let project = if args.all_projects {
        None
    } else {
        Some(Project::current().map_err(|err| {
            CommandError::usage("cannot determine the project of the working directory")
                .because(err)
        })?)
    };
    let (sessions, unreadable) = listing::list(&home, project.as_ref());
    for problem in &unreadable {
        eprintln!("crumb ls: skipped: {problem}");
    }
    let mut out = Vec::new();
    let built = if args.json {
        serde_json::to_writer_pretty(&mut out, &sessions)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        write_table(&mut out, &sessions, args.all_projects)
    };
    // Writing into a Vec fails only if serialising does; say so rather than print half a list.
    built.map_err(CommandError::failure_from)?;
    stdout::print(out)?;
    Ok(ExitStatus::SUCCESS)
}

fn write_table(
    out: &mut impl Write,
    sessions: &[SessionSummary],
    with_project: bool,
) -> std::io::Result<()> {
    if sessions.is_empty() {
        let scope = if with_project {
            ""
        } else {
            " for this project (try --all-projects)"
        };
        return writeln!(out, "no sessions{scope}");
    }
    let now = chrono::Utc::now();
    let pipeline_width = sessions
        .iter()
        .map(|s| s.pipeline.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    if with_project {
        write!(out, "{:<16}  ", "PROJECT")?;
    }
    writeln!(
        out,
        "{:<26}  {:<8}  {:<pipeline_width$}  {:>4}  GOAL",
        "ID", "STATUS", "PIPELINE", "AGE"
    )?;
    for session in sessions {
        if with_project {
            write!(out, "{:<16}  ", session.project)?;
        }
        writeln!(
            out,
            "{:<26}  {:<8}  {:<pipeline_width$}  {:>4}  {}",
            session.id,
            session.status,
            session.pipeline,
            listing::age(&session.created, now),
            one_line(&session.goal, GOAL_WIDTH),
        )?;
    }
    Ok(())
}

/// The goal on one line, cut to `width` characters with an ellipsis.
fn one_line(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= width {
        flat
    } else {
        let mut cut: String = flat.chars().take(width - 1).collect();
        cut.push('…');
        cut
    }
}
