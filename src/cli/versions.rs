//! `crumb versions [<session>]`: the project's released versions (only one session's, given
//! one), oldest first.

use std::fmt::Write as _;

use super::error::{CommandError, ExitStatus};
use crate::runtime::versions::{dir_of_session, list};

/// Arguments of `crumb versions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the versions released from this session.
    pub session: Option<String>,
    #[command(flatten)]
    pub flags: super::versions_ref::VersionFlags,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.flags.home.as_deref())?;
    let (dir, only) = match &args.session {
        Some(reference) => {
            let project = crate::home::Project::current().ok();
            let session = crate::runtime::resolve::resolve(&home, project.as_ref(), reference)?;
            (
                dir_of_session(session.path()),
                Some(session.id().to_owned()),
            )
        }
        None => (super::versions_ref::project_versions(&home)?, None),
    };
    let versions: Vec<_> = list(&dir)
        .into_iter()
        .filter(|m| only.as_ref().is_none_or(|id| *id == m.session))
        .collect();
    let text = if args.flags.json {
        serde_json::to_string_pretty(&versions).map_err(CommandError::failure_from)? + "\n"
    } else if versions.is_empty() {
        "no versions yet (`crumb release <session>` makes one)\n".to_owned()
    } else {
        let mut out = String::new();
        for m in &versions {
            let judged = m.judged.as_ref().map_or_else(
                || "-".to_owned(),
                |j| format!("{} {}", j.verdict, j.aggregate),
            );
            let _ = writeln!(
                out,
                "{:<12} {}  {} file(s)  {judged:<12} session {} at {}{}",
                m.name,
                m.created,
                m.files.len(),
                m.session,
                m.at,
                m.note
                    .as_deref()
                    .map(|n| format!("  — {n}"))
                    .unwrap_or_default()
            );
        }
        out
    };
    super::stdout::print(&text)?;
    Ok(ExitStatus::SUCCESS)
}
