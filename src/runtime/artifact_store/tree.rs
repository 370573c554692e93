//! The `artifacts/` tree as it was after an event: the latest recorded hash of every path the
//! transcript's prefix names. Keeping an event's files (before it is appended) and restoring a
//! tree into another folder both go through the [`ObjectStore`].

use std::collections::BTreeMap;
use std::path::Path;

use super::objects::{ObjectError, ObjectStore};
use crate::transcript::{ArtifactRef, Event};

/// Path → sha256 of every file the events recorded, the latest record of each path winning.
pub(crate) type Tree = BTreeMap<String, String>;

/// The tree after the last of `events`.
pub(crate) fn tree_of(events: &[Event]) -> Tree {
    let mut tree = Tree::new();
    for artifact in events.iter().flat_map(|e| &e.artifacts) {
        tree.insert(artifact.path.clone(), artifact.sha256.clone());
    }
    tree
}

/// Store every file `artifacts` records whose content (read under `session`) has the recorded
/// hash; one that is absent or differs is left out (the store then reports it missing). Fails,
/// storing nothing more, when the session's store would pass `cap` bytes.
pub(crate) fn keep(
    session: &Path,
    artifacts: &[ArtifactRef],
    cap: u64,
) -> Result<u64, ObjectError> {
    let store = ObjectStore::of(session);
    let mut used = store.used_bytes();
    let mut added = 0;
    for artifact in artifacts {
        if store.contains(&artifact.sha256) {
            continue;
        }
        let Ok(file) = crate::fs::confine::resolve_inside(session, &artifact.path) else {
            continue;
        };
        let Ok(bytes) = crate::fs::bounded_read::read(&file, cap.saturating_add(1)) else {
            if std::fs::metadata(&file).is_ok_and(|m| m.len() > cap) {
                let size = std::fs::metadata(&file).map_or(0, |m| m.len());
                return Err(ObjectError::CapExceeded {
                    path: artifact.path.clone(),
                    size,
                    total: used.saturating_add(size),
                    cap,
                });
            }
            continue;
        };
        if crumb_core::digest::sha256_hex(&bytes) != artifact.sha256 {
            continue;
        }
        let stored = store.put(&artifact.path, &artifact.sha256, &bytes, used, cap)?;
        used += stored;
        added += stored;
    }
    Ok(added)
}

/// Write `tree` under `into` (a session folder), each file from `parent`'s store, or — for a
/// session made before the store, or an object it lost — from `parent`'s own file when that
/// still has the recorded content. The objects restored are adopted into `into`'s store. Returns
/// the files that could not be restored, with why.
pub(crate) fn restore(parent: &Path, into: &Path, tree: &Tree) -> Vec<(String, String)> {
    let from = ObjectStore::of(parent);
    let mine = ObjectStore::of(into);
    let mut missing = Vec::new();
    for (path, sha) in tree {
        let outcome = (|| {
            let to = crate::fs::confine::join_inside(into, path).map_err(|e| e.to_string())?;
            let stored = from.restore_to(sha, &to);
            match stored {
                Ok(()) => mine.adopt(&from, sha).map_err(|e| e.to_string()),
                Err(ObjectError::Missing(_)) => {
                    let bytes = file_bytes(parent, path, sha)?;
                    if let Some(dir) = to.parent() {
                        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
                    }
                    std::fs::write(&to, bytes).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            }
        })();
        if let Err(why) = outcome {
            missing.push((path.clone(), why));
        }
    }
    missing
}

/// The content `session` recorded for `path` as `sha`: its store's object, or — for a session
/// made before the store, or an object it lost — its own file while that still has the
/// recorded content. A corrupt object is an error, never a fallback.
pub(crate) fn verified(session: &Path, path: &str, sha: &str) -> Result<Vec<u8>, String> {
    match ObjectStore::of(session).read(sha) {
        Ok(bytes) => Ok(bytes),
        Err(ObjectError::Missing(_)) => file_bytes(session, path, sha),
        Err(e) => Err(e.to_string()),
    }
}

/// The pre-store way: `session`'s file, if it still hashes to `sha`.
fn file_bytes(session: &Path, path: &str, sha: &str) -> Result<Vec<u8>, String> {
    let from = crate::fs::confine::resolve_inside(session, path).map_err(|e| e.to_string())?;
    let bytes = crate::fs::bounded_read::read(&from, 256 << 20).map_err(|e| e.to_string())?;
    if crumb_core::digest::sha256_hex(&bytes) != sha {
        return Err("the store has no copy and the file changed since".to_owned());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(path: &str, bytes: &[u8]) -> ArtifactRef {
        ArtifactRef {
            path: path.to_owned(),
            sha256: crumb_core::digest::sha256_hex(bytes),
            role: None,
        }
    }

    #[test]
    fn a_rewritten_file_is_restored_as_it_was() {
        let parent = tempfile::tempdir().unwrap();
        let fork = tempfile::tempdir().unwrap();
        let file = parent.path().join("artifacts/game/index.html");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"v1").unwrap();
        let first = artifact("artifacts/game/index.html", b"v1");
        assert_eq!(
            keep(parent.path(), std::slice::from_ref(&first), 1 << 20),
            Ok(2)
        );
        std::fs::write(&file, b"v2").unwrap();
        keep(
            parent.path(),
            &[artifact("artifacts/game/index.html", b"v2")],
            1 << 20,
        )
        .unwrap();
        let tree = Tree::from([(first.path.clone(), first.sha256.clone())]);
        assert!(restore(parent.path(), fork.path(), &tree).is_empty());
        assert_eq!(
            std::fs::read(fork.path().join("artifacts/game/index.html")).unwrap(),
            b"v1"
        );
        assert!(ObjectStore::of(fork.path()).contains(&first.sha256));
    }

    #[test]
    fn a_file_that_differs_from_its_record_is_not_stored() {
        let session = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(session.path().join("artifacts")).unwrap();
        std::fs::write(session.path().join("artifacts/a"), b"real").unwrap();
        let claimed = artifact("artifacts/a", b"claimed");
        assert_eq!(
            keep(session.path(), std::slice::from_ref(&claimed), 1 << 20),
            Ok(0)
        );
        assert!(!ObjectStore::of(session.path()).contains(&claimed.sha256));
    }

    #[test]
    fn a_build_past_the_cap_is_refused() {
        let session = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(session.path().join("artifacts")).unwrap();
        std::fs::write(session.path().join("artifacts/big"), vec![7u8; 64]).unwrap();
        let refused = keep(session.path(), &[artifact("artifacts/big", &[7u8; 64])], 32);
        assert!(
            matches!(
                refused,
                Err(ObjectError::CapExceeded {
                    size: 64,
                    cap: 32,
                    ..
                })
            ),
            "{refused:?}"
        );
    }
}
