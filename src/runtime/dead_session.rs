//! The session `crumb run` picks up instead of starting anew: one of this project's sessions for
//! the same pitch and the same pipeline (by frozen hash, so an edited pipeline starts afresh)
//! whose coordinator died (meta says running, nobody holds the lock, and its transcript does not
//! end in `session.end`). One that cannot be resumed (no `session.start` or `goal`, unreadable
//! meta) is skipped with a note saying why, and `crumb run` starts afresh; so is one that waits
//! for a person or stopped on an internal error (`crumb resume` is how those go on).

use std::path::Path;

use crate::engine::replay::Parsed;
use crate::transcript::Kind;
use crate::transcript::reader::Reader;

use super::freeze::{FreezeSource, content_hash};
use super::listing;
use super::session_dir::SessionDir;
use crate::home::{CrumbHome, Project};

/// The newest resumable dead session of `project` running `pipeline_path` on `pitch`, if any,
/// and one line for each same-pitch session passed over: still driven by another coordinator,
/// frozen from another version of the pipeline, or unresumable.
pub(crate) fn find(
    home: &CrumbHome,
    project: &Project,
    pipeline: FreezeSource<'_>,
    pitch: &str,
) -> (Option<SessionDir>, Vec<String>) {
    let (sessions, _) = listing::list(home, Some(project));
    let mut skipped = Vec::new();
    let mut candidates = Vec::new();
    for session in sessions.into_iter().filter(|session| session.goal == pitch) {
        match session.status {
            "dead" => candidates.push(session),
            // Another coordinator holds its lock: never silent, so two runs of one pitch at once
            // (or a coordinator that is still exiting) explain the fresh session they cause.
            "running" => skipped.push(format!(
                "session {} for the same pitch is still driven by another coordinator (its lock is held)",
                session.id
            )),
            // Not dead, but not over either: running the pitch again must not hide it.
            "awaiting" => skipped.push(format!(
                "session {id} for the same pitch is waiting for a person (`crumb say {id} /approve`, then `crumb resume {id}`)",
                id = session.id
            )),
            "error" => skipped.push(format!(
                "session {id} for the same pitch stopped on an internal error (`crumb resume {id}` goes on with it)",
                id = session.id
            )),
            _ => {}
        }
    }
    if candidates.is_empty() {
        return (None, skipped); // the common case costs one directory listing, no hashing
    }
    let Ok(hash) = content_hash(pipeline) else {
        skipped.push(format!(
            "the pipeline {} cannot be frozen to compare it with the dead session's",
            pipeline.path.display()
        ));
        return (None, skipped);
    };
    for candidate in candidates {
        let dir = match SessionDir::open(&candidate.path) {
            Ok(dir) => dir,
            Err(err) => {
                skipped.push(format!("session {} cannot be resumed: {err}", candidate.id));
                continue;
            }
        };
        let meta = match dir.read_meta() {
            Ok(meta) => meta,
            Err(err) => {
                skipped.push(format!("session {} cannot be resumed: {err}", dir.id()));
                continue;
            }
        };
        if meta.pipeline_hash != hash {
            skipped.push(format!(
                "session {} ran another version of the pipeline (it changed since)",
                dir.id()
            ));
            continue;
        }
        match unresumable(&dir.transcript()) {
            Some(why) => skipped.push(format!("session {} cannot be resumed: {why}", dir.id())),
            None => return (Some(dir), skipped),
        }
    }
    (None, skipped)
}

/// How many events at a transcript's head are searched for `session.start` and `goal` (the
/// runner writes them first, in one append).
const HEAD_EVENTS: usize = 16;

/// Why the transcript at `path` cannot be taken over, if it cannot: without `session.start` there
/// is no run configuration, and without `goal` a resumed session could only stall.
pub(crate) fn unresumable(path: &Path) -> Option<String> {
    let file = match crate::fs::bounded_read::open_regular(path) {
        Ok(file) => file,
        Err(err) => return Some(format!("its transcript cannot be read: {err}")),
    };
    let reader = Reader::tolerant(std::io::BufReader::new(file));
    let (mut events, mut start, mut goal) = (0, false, false);
    for parsed in reader.filter_map(Result::ok).take(HEAD_EVENTS) {
        if let Parsed::Event(event) | Parsed::Mapped(event, _) = parsed {
            events += 1;
            start |= event.kind == Kind::SessionStart;
            goal |= event.kind == Kind::Goal;
        }
    }
    match (events, start, goal) {
        (0, ..) => Some("its transcript is empty (its run was killed while it started)".into()),
        (_, false, _) => Some("its transcript has no session.start".into()),
        (_, _, false) => Some("its transcript has no goal".into()),
        _ => None,
    }
}
