//! The coordinator lock: an exclusive advisory lock (`flock`) on `<session>/coordinator.lock`,
//! held for the coordinator's whole lifetime.
//!
//! The kernel releases it when the process dies, however it dies, so there is no stale-PID
//! guessing: a session whose meta says `running` while its lock is free was left by a dead
//! coordinator and may be resumed.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// File name of the lock inside a session directory.
pub const LOCK_FILE: &str = "coordinator.lock";

/// A held coordinator lock. Dropping it releases the lock.
#[derive(Debug)]
pub struct CoordinatorLock {
    file: File,
    path: PathBuf,
}

/// The lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("session is already driven by another coordinator (lock {path} is held)")]
    Held { path: String },
    #[error("cannot open lock file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl CoordinatorLock {
    /// Take the lock of the session at `session_dir` without waiting.
    pub fn acquire(session_dir: &Path) -> Result<Self, LockError> {
        let path = session_dir.join(LOCK_FILE);
        let shown = || path.display().to_string();
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| LockError::Io {
                path: shown(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(LockError::Held { path: shown() }),
            Err(TryLockError::Error(source)) => {
                return Err(LockError::Io {
                    path: shown(),
                    source,
                });
            }
        }
        // The pid is informational (for people reading the folder); the flock is the truth.
        let _ = file.set_len(0);
        let _ = writeln!(file, "{}", std::process::id());
        Ok(CoordinatorLock { file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The same held lock after its session folder was renamed to `session_dir` (the lock is on
    /// the open file, which a rename does not touch).
    #[must_use]
    pub fn moved_to(self, session_dir: &Path) -> Self {
        CoordinatorLock {
            file: self.file,
            path: session_dir.join(LOCK_FILE),
        }
    }

    /// Release explicitly (same as dropping).
    pub fn release(self) {
        let _ = self.file.unlock();
    }
}

/// Whether some process currently holds the coordinator lock of `session_dir`.
///
/// Probes by trying to take the lock and immediately releasing it; a missing lock file means no
/// coordinator ever ran (or it was cleaned up), so it is not held.
pub fn is_held(session_dir: &Path) -> bool {
    let Ok(file) = File::open(session_dir.join(LOCK_FILE)) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_acquire_fails_until_released() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_held(dir.path()));
        let lock = CoordinatorLock::acquire(dir.path()).unwrap();
        assert!(is_held(dir.path()));
        assert!(matches!(
            CoordinatorLock::acquire(dir.path()),
            Err(LockError::Held { .. })
        ));
        lock.release();
        assert!(!is_held(dir.path()));
        let again = CoordinatorLock::acquire(dir.path()).unwrap();
        drop(again);
        assert!(!is_held(dir.path()));
    }
}
