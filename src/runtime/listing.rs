//! Listing sessions for `crumb ls`: reads only each session's `meta.json` (and probes its lock),
//! never a transcript, so it stays fast with hundreds of sessions.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::lock;
use super::meta::{Meta, SessionStatus};
use super::session_dir::META_FILE;
use crate::home::{CrumbHome, Project};

/// What `crumb ls` shows about one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SessionSummary {
    pub id: String,
    pub project: String,
    pub path: PathBuf,
    /// `running`, `awaiting`, `done`, `error`, or `dead` (meta says running, nobody holds the lock,
    /// and the transcript does not end in `session.end`, which would make it `done`).
    pub status: &'static str,
    pub pipeline: String,
    pub goal: String,
    pub created: String,
    pub updated: String,
}

/// The ids of `project`'s sessions now: what [`new_since`] compares with.
pub(crate) fn ids(home: &CrumbHome, project: &Project) -> std::collections::HashSet<String> {
    list(home, Some(project))
        .0
        .into_iter()
        .map(|s| s.id)
        .collect()
}

/// A session of `project` that is not in `before`: the one a `crumb run` started since.
pub(crate) fn new_since(
    home: &CrumbHome,
    project: &Project,
    before: &std::collections::HashSet<String>,
) -> Option<SessionSummary> {
    list(home, Some(project))
        .0
        .into_iter()
        .find(|s| !before.contains(&s.id))
}

/// The sessions of `project` (or of every project), newest first, plus the folders that could
/// not be read (reported, not fatal).
pub(crate) fn list(
    home: &CrumbHome,
    project: Option<&Project>,
) -> (Vec<SessionSummary>, Vec<String>) {
    let mut summaries = Vec::new();
    let mut unreadable = Vec::new();
    let projects: Vec<(String, PathBuf)> = match project {
        Some(project) => vec![(project.id.clone(), home.sessions_dir(project))],
        None => std::fs::read_dir(home.projects_dir())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| {
                        (
                            entry.file_name().to_string_lossy().into_owned(),
                            entry.path().join("sessions"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    for (project_id, sessions) in projects {
        super::session::sweep(&sessions);
        let Ok(entries) = std::fs::read_dir(&sessions) else {
            continue;
        };
        for entry in entries.flatten() {
            // Folders being built (or abandoned while built) are not sessions yet.
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            match summarise(&project_id, &entry.path()) {
                Ok(summary) => summaries.push(summary),
                Err(problem) => unreadable.push(problem),
            }
        }
    }
    // ULIDs sort by creation time.
    summaries.sort_by(|a, b| b.id.cmp(&a.id));
    (summaries, unreadable)
}

fn summarise(project: &str, dir: &Path) -> Result<SessionSummary, String> {
    let meta = Meta::read(&dir.join(META_FILE)).map_err(|err| err.to_string())?;
    let status = match meta.status {
        SessionStatus::Running if !lock::is_held(dir) => {
            // A transcript ending in `session.end` is finished, whatever meta says.
            if crate::transcript::end::has_ended(&dir.join(super::session_dir::TRANSCRIPT_FILE)) {
                "done"
            } else {
                "dead"
            }
        }
        other => other.as_str(),
    };
    Ok(SessionSummary {
        id: meta.session_id,
        project: project.to_owned(),
        path: dir.to_path_buf(),
        status,
        pipeline: meta.pipeline,
        goal: meta.goal,
        created: meta.created,
        updated: meta.updated,
    })
}

/// A short human age (`42s`, `5m`, `3h`, `2d`) between an RFC 3339 time and `now`.
pub(crate) fn age(created: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    let Ok(created) = chrono::DateTime::parse_from_rfc3339(created) else {
        return "?".into();
    };
    let seconds = (now - created.with_timezone(&chrono::Utc))
        .num_seconds()
        .max(0);
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3_600 => format!("{}m", seconds / 60),
        3_600..86_400 => format!("{}h", seconds / 3_600),
        _ => format!("{}d", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_short() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(age("2026-11-30T09:59:30Z", now), "30s");
        assert_eq!(age("2026-11-30T09:00:00Z", now), "1h");
        assert_eq!(age("2026-11-28T10:00:00Z", now), "2d");
        assert_eq!(age("2026-12-01T10:00:00Z", now), "0s");
        assert_eq!(age("yesterday", now), "?");
    }
}
