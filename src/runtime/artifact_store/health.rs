//! Whether a session's store still holds, intact, every file its transcript records: what
//! `crumb status` and `crumb doctor` report. Nothing here repairs or falls back; replay never
//! reads the store, so a damaged one costs forks, releases and diffs, never the fold.

use std::path::Path;

use super::objects::{ObjectError, ObjectStore, is_hash};
use super::tree::Tree;
use crate::transcript::Event;

/// One recorded file the store cannot give back as it was.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Damage {
    pub path: String,
    pub sha256: String,
    /// `missing` or `corrupt`.
    pub problem: &'static str,
}

/// The store of one session, as checked against its transcript.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Health {
    /// The session has no store: it was made before there was one.
    pub pre_store: bool,
    /// Distinct objects the transcript records.
    pub objects: usize,
    /// Bytes the store takes.
    pub bytes: u64,
    pub damage: Vec<Damage>,
}

impl Health {
    /// One line for `crumb status`: `None` when there is nothing to say.
    pub(crate) fn problem_line(&self) -> Option<String> {
        let first = self.damage.first()?;
        let count = |problem: &str| self.damage.iter().filter(|d| d.problem == problem).count();
        Some(format!(
            "store     {} corrupt, {} missing of {} recorded object(s) (first: {}, {}); forks, releases and diffs through them are refused",
            count("corrupt"),
            count("missing"),
            self.objects,
            first.path,
            first.problem
        ))
    }
}

/// Check every distinct hash `session`'s transcript records against its store. Only the lines
/// that record files are parsed, so a long session costs one scan of its file.
pub(crate) fn check_session(session: &Path) -> Health {
    let text = std::fs::read_to_string(session.join(super::super::session_dir::TRANSCRIPT_FILE))
        .unwrap_or_default();
    let events: Vec<Event> = text
        .lines()
        .filter(|line| line.contains("\"artifacts\":["))
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    check(session, &events)
}

/// Check every distinct hash the events record against `session`'s store.
pub(crate) fn check(session: &Path, events: &[Event]) -> Health {
    let store = ObjectStore::of(session);
    let mut recorded = Tree::new();
    for artifact in events.iter().flat_map(|e| &e.artifacts) {
        if is_hash(&artifact.sha256) {
            recorded.insert(artifact.sha256.clone(), artifact.path.clone());
        }
    }
    let pre_store = !store.exists();
    let damage = if pre_store {
        Vec::new()
    } else {
        recorded
            .iter()
            .filter_map(|(sha, path)| {
                let problem = match store.read(sha) {
                    Ok(_) => return None,
                    Err(ObjectError::Corrupt { .. }) => "corrupt",
                    Err(_) => "missing",
                };
                Some(Damage {
                    path: path.clone(),
                    sha256: sha.clone(),
                    problem,
                })
            })
            .collect()
    };
    Health {
        pre_store,
        objects: recorded.len(),
        bytes: store.used_bytes(),
        damage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{ArtifactRef, Kind};

    #[test]
    fn a_corrupt_object_and_a_missing_one_are_reported() {
        let session = tempfile::tempdir().unwrap();
        let store = ObjectStore::of(session.path());
        let good = crumb_core::digest::sha256_hex(b"good");
        let lost = crumb_core::digest::sha256_hex(b"lost");
        store.put("a", &good, b"good", 0, 100).unwrap();
        let mut event = crate::engine::testkit::event(1, "builder", Kind::Build);
        for (path, sha) in [("artifacts/a", &good), ("artifacts/b", &lost)] {
            event.artifacts.push(ArtifactRef {
                path: path.to_owned(),
                sha256: sha.clone(),
                role: None,
            });
        }
        let health = check(session.path(), std::slice::from_ref(&event));
        assert_eq!(health.objects, 2);
        assert_eq!(health.damage.len(), 1);
        assert_eq!(health.damage[0].problem, "missing");
        let path = store.path(&good).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"evil").unwrap();
        let health = check(session.path(), &[event]);
        assert!(health.damage.iter().any(|d| d.problem == "corrupt"));
        assert!(health.problem_line().unwrap().contains("corrupt"));
    }
}
