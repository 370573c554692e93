//! The session `crumb run` picks up instead of starting anew: one of this project's sessions for
//! the same pitch and the same pipeline (by frozen hash, so an edited pipeline starts afresh)
//! whose coordinator died (meta says running, nobody holds the lock).

use std::path::Path;

use super::freeze::freeze;
use super::home::{CrumbHome, Project};
use super::listing;
use super::session::SessionDir;

/// The newest dead session of `project` running `pipeline_path` on `pitch`, if any.
pub fn find(
    home: &CrumbHome,
    project: &Project,
    pipeline_path: &Path,
    pitch: &str,
) -> Option<SessionDir> {
    let (sessions, _) = listing::list(home, Some(project));
    let candidates: Vec<_> = sessions
        .into_iter()
        .filter(|session| session.status == "dead" && session.goal == pitch)
        .collect();
    if candidates.is_empty() {
        return None; // the common case costs one directory listing, no hashing
    }
    let hash = pipeline_hash(pipeline_path)?;
    candidates.into_iter().find_map(|candidate| {
        let dir = SessionDir::open(&candidate.path).ok()?;
        let meta = dir.read_meta().ok()?;
        (meta.pipeline_hash == hash).then_some(dir)
    })
}

/// The hash `pipeline_path` would be frozen with, computed by freezing it into a scratch folder
/// (the hash covers the pipeline and its templates, not where they are copied).
fn pipeline_hash(pipeline_path: &Path) -> Option<String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let scratch = std::env::temp_dir().join(format!(
        "crumb-pipeline-hash-{}-{nanos}",
        std::process::id()
    ));
    let hash = freeze(pipeline_path, &scratch)
        .ok()
        .map(|frozen| frozen.hash);
    let _ = std::fs::remove_dir_all(&scratch);
    hash
}
