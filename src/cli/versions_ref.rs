//! What the version commands (`release`, `versions`, `copy-artifacts`, `diff`) are pointed at:
//! a session (read with its frozen table), or a version of the current project by name.

use std::path::PathBuf;

use super::error::CommandError;
use crate::home::{CrumbHome, Project};
use crate::pipeline::table::TransitionTable;
use crate::runtime::session_dir::SessionDir;
use crate::transcript::Event;

/// The flags every version command takes.
#[derive(Debug, clap::Args)]
pub struct VersionFlags {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// The crumb home (default `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long)]
    pub home: Option<PathBuf>,
}

/// A session, its table and its events.
pub(crate) struct OpenSession {
    pub dir: SessionDir,
    pub table: TransitionTable,
    pub events: Vec<Event>,
    pub pipeline_hash: String,
}

/// The session `reference` names (an id, a unique prefix, or a folder).
pub(crate) fn open_session(home: &CrumbHome, reference: &str) -> Result<OpenSession, CommandError> {
    let project = Project::current().ok();
    let dir = crate::runtime::resolve::resolve(home, project.as_ref(), reference)?;
    let opened = crate::runtime::versions::point::open(&dir).map_err(CommandError::usage)?;
    Ok(OpenSession {
        dir,
        table: opened.table,
        events: opened.events,
        pipeline_hash: opened.pipeline_hash,
    })
}

/// The current project's versions folder.
pub(crate) fn project_versions(home: &CrumbHome) -> Result<PathBuf, CommandError> {
    let project = Project::current()
        .map_err(|e| CommandError::failure("cannot determine the project").because(e))?;
    let sessions = home.sessions_dir(&project);
    Ok(sessions
        .parent()
        .map_or_else(|| sessions.join("versions"), |p| p.join("versions")))
}

/// The folder of the version `name` of the current project, when there is one.
pub(crate) fn version(home: &CrumbHome, name: &str) -> Option<PathBuf> {
    let safe = !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\']);
    let dir = project_versions(home).ok()?.join(name);
    (safe
        && dir
            .join(crate::runtime::versions::manifest::MANIFEST_FILE)
            .is_file())
    .then_some(dir)
}
