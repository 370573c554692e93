//! `objects/ab/cdef…`: every file an event records, stored once under its sha256. An object is
//! written through a temporary file renamed into place and made read-only, so it is immutable:
//! other immutable copies (a fork's objects, a release's files) are hard links to it, and the
//! mutable `artifacts/` tree gets copies (`std::fs::copy`, which the kernel turns into a reflink
//! on filesystems that share extents), since agents rewrite their files in place.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The store's folder inside a session.
pub(crate) const OBJECTS_DIR: &str = "objects";

/// The objects of one session (or of any folder laid out the same way).
#[derive(Debug, Clone)]
pub(crate) struct ObjectStore {
    root: PathBuf,
}

/// Why an object could not be stored or used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ObjectError {
    #[error("`{0}` is not a sha256 (64 lower-case hex digits)")]
    NotAHash(String),
    #[error("object {0} is missing from the store")]
    Missing(String),
    #[error("object {sha} is corrupt: its content hashes to {actual}")]
    Corrupt { sha: String, actual: String },
    #[error(
        "storing {path} ({size} bytes) would take the session's store to {total} bytes, past its cap of {cap} bytes (`limits.max_store_mb`)"
    )]
    CapExceeded {
        path: String,
        size: u64,
        total: u64,
        cap: u64,
    },
    #[error("cannot write the store: {0}")]
    Io(String),
}

fn io(e: &std::io::Error) -> ObjectError {
    ObjectError::Io(e.to_string())
}

/// Whether `sha` has the recorded form of a content hash.
pub(crate) fn is_hash(sha: &str) -> bool {
    sha.len() == 64
        && sha
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl ObjectStore {
    /// The store of the session folder `session`.
    pub(crate) fn of(session: &Path) -> Self {
        ObjectStore {
            root: session.join(OBJECTS_DIR),
        }
    }

    /// Where the object `sha` lives (or would).
    pub(crate) fn path(&self, sha: &str) -> Result<PathBuf, ObjectError> {
        if !is_hash(sha) {
            return Err(ObjectError::NotAHash(sha.chars().take(80).collect()));
        }
        Ok(self.root.join(&sha[..2]).join(&sha[2..]))
    }

    /// Whether the store holds an object named `sha` (not whether it is intact).
    pub(crate) fn contains(&self, sha: &str) -> bool {
        self.path(sha).is_ok_and(|path| path.is_file())
    }

    /// Whether the session has a store at all (sessions made before it have none).
    pub(crate) fn exists(&self) -> bool {
        self.root.is_dir()
    }

    /// The bytes every object takes, counted from the folder itself.
    pub(crate) fn used_bytes(&self) -> u64 {
        let Ok(fans) = std::fs::read_dir(&self.root) else {
            return 0;
        };
        fans.flatten()
            .filter_map(|fan| std::fs::read_dir(fan.path()).ok())
            .flat_map(Iterator::flatten)
            .filter_map(|object| object.metadata().ok())
            .filter(std::fs::Metadata::is_file)
            .map(|meta| meta.len())
            .sum()
    }

    /// Store `bytes` (whose hash is `sha`) unless the store already holds it; `used` is what the
    /// store takes now, checked against `cap`. Returns the bytes newly stored.
    pub(crate) fn put(
        &self,
        label: &str,
        sha: &str,
        bytes: &[u8],
        used: u64,
        cap: u64,
    ) -> Result<u64, ObjectError> {
        let target = self.path(sha)?;
        if target.is_file() {
            return Ok(0);
        }
        let size = bytes.len() as u64;
        if used.saturating_add(size) > cap {
            return Err(ObjectError::CapExceeded {
                path: label.to_owned(),
                size,
                total: used.saturating_add(size),
                cap,
            });
        }
        let fan = target.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(fan).map_err(|e| io(&e))?;
        let tmp = fan.join(format!(".tmp-{}-{}", std::process::id(), ulid::Ulid::new()));
        // Not synced: the store is exactly as durable as the transcript (whose writer does not
        // sync either), and an object a crash left short no longer hashes to its name, which
        // `health` reports; it is never used.
        let written = std::fs::File::create(&tmp).and_then(|mut file| {
            file.write_all(bytes)?;
            let mut perms = file.metadata()?.permissions();
            perms.set_readonly(true);
            file.set_permissions(perms)
        });
        let placed = written.and_then(|()| std::fs::rename(&tmp, &target));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(&e));
        }
        Ok(size)
    }

    /// The object's bytes, checked against its name: a missing or corrupt object is an error,
    /// never returned.
    pub(crate) fn read(&self, sha: &str) -> Result<Vec<u8>, ObjectError> {
        let path = self.path(sha)?;
        let bytes = std::fs::read(&path).map_err(|_| ObjectError::Missing(sha.to_owned()))?;
        let actual = crumb_core::digest::sha256_hex(&bytes);
        if actual != sha {
            return Err(ObjectError::Corrupt {
                sha: sha.to_owned(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Make `sha` (intact in `from`) an object of this store too: a hard link where the
    /// filesystem allows, else a copy.
    pub(crate) fn adopt(&self, from: &ObjectStore, sha: &str) -> Result<(), ObjectError> {
        let target = self.path(sha)?;
        if target.is_file() {
            return Ok(());
        }
        let source = from.path(sha)?;
        from.read(sha)?;
        if let Some(fan) = target.parent() {
            std::fs::create_dir_all(fan).map_err(|e| io(&e))?;
        }
        if std::fs::hard_link(&source, &target).is_ok() {
            return Ok(());
        }
        let bytes = from.read(sha)?;
        self.put(sha, sha, &bytes, 0, u64::MAX).map(|_| ())
    }

    /// Write the object `sha` to `to` as an ordinary, writable file (its folders created),
    /// after checking it is intact.
    pub(crate) fn restore_to(&self, sha: &str, to: &Path) -> Result<(), ObjectError> {
        let bytes = self.read(sha)?;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(&e))?;
        }
        let _ = std::fs::remove_file(to);
        std::fs::write(to, bytes).map_err(|e| io(&e))
    }

    /// Hard-link the (already checked) object `sha` to `to`, else copy it: for read-only trees
    /// such as a release.
    pub(crate) fn link_to(&self, sha: &str, to: &Path) -> Result<(), ObjectError> {
        let source = self.path(sha)?;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(&e))?;
        }
        if std::fs::hard_link(&source, to).is_ok() {
            return Ok(());
        }
        std::fs::copy(&source, to).map(|_| ()).map_err(|e| io(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(bytes: &[u8]) -> String {
        crumb_core::digest::sha256_hex(bytes)
    }

    #[test]
    fn identical_content_is_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::of(dir.path());
        let hash = sha(b"game");
        assert_eq!(store.put("a", &hash, b"game", 0, 100), Ok(4));
        assert_eq!(store.put("b", &hash, b"game", 4, 100), Ok(0));
        assert_eq!(store.used_bytes(), 4);
        assert_eq!(store.read(&hash), Ok(b"game".to_vec()));
        let path = store.path(&hash).unwrap();
        assert!(path.ends_with(format!("objects/{}/{}", &hash[..2], &hash[2..])));
        assert!(std::fs::metadata(path).unwrap().permissions().readonly());
    }

    #[test]
    fn a_store_past_its_cap_refuses_and_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::of(dir.path());
        let hash = sha(b"0123456789");
        let refused = store.put("artifacts/big", &hash, b"0123456789", 95, 100);
        assert!(
            matches!(
                refused,
                Err(ObjectError::CapExceeded {
                    size: 10,
                    total: 105,
                    cap: 100,
                    ..
                })
            ),
            "{refused:?}"
        );
        assert!(!store.contains(&hash));
    }

    #[test]
    fn a_corrupt_or_missing_object_is_never_returned() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::of(dir.path());
        let hash = sha(b"good");
        store.put("a", &hash, b"good", 0, 100).unwrap();
        let path = store.path(&hash).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"evil").unwrap();
        assert!(matches!(
            store.read(&hash),
            Err(ObjectError::Corrupt { .. })
        ));
        let other = sha(b"never stored");
        assert_eq!(store.read(&other), Err(ObjectError::Missing(other.clone())));
        assert!(matches!(store.path("../x"), Err(ObjectError::NotAHash(_))));
    }
}
