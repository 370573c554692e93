//! `crumb release <session> [--at EVENT] [--as NAME] [--note TEXT]`: freeze a point of a session
//! (by default the build its final verdict judged) as a named version of the project.

use super::error::{CommandError, ExitStatus};
use crate::runtime::versions::{dir_of_session, point::point, release};

/// Arguments of `crumb release`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session: an id, a unique prefix of one, or a session folder.
    pub session: String,
    /// The event whose tree to freeze (default: the build the final verdict judged).
    #[arg(long, value_name = "EVENT")]
    pub at: Option<String>,
    /// The version's name, unique in the project (default: the next free `v<n>`).
    #[arg(long = "as", value_name = "NAME")]
    pub name: Option<String>,
    /// A note kept in the manifest.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    #[command(flatten)]
    pub flags: super::versions_ref::VersionFlags,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.flags.home.as_deref())?;
    let session = super::versions_ref::open_session(&home, &args.session)?;
    let point =
        point(&session.table, &session.events, args.at.as_deref()).map_err(CommandError::usage)?;
    let manifest = release::release(
        &dir_of_session(session.dir.path()),
        &point,
        &release::Release {
            session: session.dir.path(),
            session_id: session.dir.id(),
            pipeline_hash: &session.pipeline_hash,
            name: args.name.as_deref(),
            note: args.note.as_deref(),
        },
    )
    .map_err(CommandError::usage)?;
    let text = if args.flags.json {
        serde_json::to_string_pretty(&manifest).map_err(CommandError::failure_from)? + "\n"
    } else {
        let judged = manifest.judged.as_ref().map_or_else(
            || "no verdict judged this build".to_owned(),
            |j| format!("judged {} × {} ({})", j.verdict, j.severity, j.aggregate),
        );
        format!(
            "version  {} · {} file(s) · session {} at {} · {judged}\n",
            manifest.name,
            manifest.files.len(),
            manifest.session,
            manifest.at
        )
    };
    super::stdout::print(&text)?;
    Ok(ExitStatus::SUCCESS)
}
