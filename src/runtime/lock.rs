//! The coordinator lock: an exclusive advisory lock (`flock`) on `<session>/coordinator.lock`,
//! held for the coordinator's whole lifetime, with its owner (pid and start time) written in the
//! file.
//!
//! The kernel releases the lock when the last descriptor of its open file is closed, however the
//! coordinator dies, so a session whose meta says `running` while its lock is free was left by a
//! dead coordinator and may be resumed. Two things other than a live coordinator can hold that
//! open file for a moment, and neither may pass for one:
//!
//! - **a child the coordinator was starting.** From fork (or `posix_spawn`'s clone) until its exec
//!   closes the descriptors marked close-on-exec, a child shares every open file of its parent,
//!   this lock included. A coordinator killed mid-spawn leaves its lock held for as long as that
//!   child takes to exec: a few milliseconds, more under load (measured: 2 of 52 SIGKILLs of a
//!   real `crumb run` left the lock held for 1.6 and 4.5 ms after the killed coordinator was
//!   reaped). A `crumb run` that looked in that moment took the session for a live one and started
//!   a fresh session;
//! - **a probe** ([`is_held`] from `crumb ls`, Studio or another run's auto-resume), which takes the
//!   lock shared for an instant; a take-over at that instant could not take it.
//!
//! So the lock file names its owner, "held" means held by a live owner, and [`CoordinatorLock::
//! acquire`] waits (bounded by [`LEFTOVER_WAIT`]) for a lock whose owner is gone to be let go by
//! whatever still holds it. Once it has the lock, no child of the dead coordinator is between fork
//! and exec any more: each one has exec'd into its recorded process group (where the orphan reap
//! finds it) or died.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::process::reap::ProcStat;

/// File name of the lock inside a session directory.
pub(crate) const LOCK_FILE: &str = "coordinator.lock";

/// How long a take-over waits for a lock held only by what a dead owner left (a child between
/// fork and exec, a probe) before it gives up.
pub(crate) const LEFTOVER_WAIT: Duration = Duration::from_secs(10);

/// How often a take-over looks again while it waits.
const RETRY: Duration = Duration::from_millis(2);

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
    #[error(
        "the lock {path} is still held {}s after its coordinator{} died, by a process it left behind",
        LEFTOVER_WAIT.as_secs(),
        .owner.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Leftover { path: String, owner: Option<u32> },
    #[error("cannot open lock file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// Who the lock file says holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// This process is alive (the same process: its start time matches when recorded).
    Alive(u32),
    /// This process has exited (or its id now names another process).
    Gone(u32),
    /// Nothing readable is recorded (a lock being taken this instant).
    Unknown,
}

impl CoordinatorLock {
    /// Take the lock of the session at `session_dir`. Refused at once when a live coordinator
    /// holds it; when only what a dead one left holds it, taken as soon as that lets go (see the
    /// module docs).
    pub fn acquire(session_dir: &Path) -> Result<Self, LockError> {
        let path = session_dir.join(LOCK_FILE);
        let shown = || path.display().to_string();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|source| LockError::Io {
                path: shown(),
                source,
            })?;
        let deadline = Instant::now() + LEFTOVER_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => match owner(&file) {
                    Owner::Alive(_) => return Err(LockError::Held { path: shown() }),
                    _ if Instant::now() < deadline => std::thread::sleep(RETRY),
                    Owner::Gone(pid) => {
                        return Err(LockError::Leftover {
                            path: shown(),
                            owner: Some(pid),
                        });
                    }
                    Owner::Unknown => return Err(LockError::Held { path: shown() }),
                },
                Err(TryLockError::Error(source)) => {
                    return Err(LockError::Io {
                        path: shown(),
                        source,
                    });
                }
            }
        }
        record_owner(&file);
        Ok(CoordinatorLock { file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The same held lock after its session folder was renamed to `session_dir` (the lock is on
    /// the open file, which a rename does not touch).
    #[must_use]
    pub(crate) fn moved_to(self, session_dir: &Path) -> Self {
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

/// Whether a live coordinator currently holds the lock of `session_dir`.
///
/// Probes by trying to take the lock shared and releasing it at once; a lock held while its
/// recorded owner is gone is only what a dead coordinator left (see the module docs), so not held.
/// A missing lock file means no coordinator ever ran (or it was cleaned up), so it is not held.
pub(crate) fn is_held(session_dir: &Path) -> bool {
    let Ok(file) = File::open(session_dir.join(LOCK_FILE)) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(TryLockError::WouldBlock) => !matches!(owner(&file), Owner::Gone(_)),
        Err(TryLockError::Error(_)) => false,
    }
}

/// Write this process as the lock's owner: `<pid> <start time> <pid namespace>` on the first
/// line. Written over the old record in one write and then cut to length, so a reader sees the old
/// line or the new one. Informational for people reading the folder; for crumb it tells a live
/// holder from leftovers.
fn record_owner(file: &File) {
    let pid = std::process::id();
    let start = i32::try_from(pid)
        .ok()
        .and_then(ProcStat::read)
        .and_then(|stat| stat.start_time);
    let line = match (start, pid_namespace()) {
        (Some(start), Some(ns)) => format!("{pid} {start} {ns}\n"),
        _ => format!("{pid}\n"),
    };
    if file.write_all_at(line.as_bytes(), 0).is_ok() {
        let _ = file.set_len(line.len() as u64);
    }
}

/// This process's pid namespace (`pid:[4026531836]`): a pid recorded in another one means nothing
/// here.
fn pid_namespace() -> Option<String> {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .map(|link| link.display().to_string())
}

/// The owner the lock file records. Only a process that is certainly gone counts as gone: a record
/// without a start time (an older crumb's) is judged by its pid alone, and one from another pid
/// namespace, or read where `/proc` is not mounted, counts as alive.
fn owner(file: &File) -> Owner {
    let mut buf = [0u8; 128];
    let read = file.read_at(&mut buf, 0).unwrap_or(0);
    let text = std::str::from_utf8(&buf[..read]).unwrap_or_default();
    let Some(line) = text.split_once('\n').map(|(line, _)| line) else {
        return Owner::Unknown;
    };
    let mut fields = line.split_whitespace();
    let Some(pid) = fields
        .next()
        .and_then(|p| p.parse::<i32>().ok())
        .filter(|&pid| pid > 0)
    else {
        return Owner::Unknown;
    };
    let start = fields.next().and_then(|s| s.parse::<u64>().ok());
    let elsewhere = fields
        .next()
        .is_some_and(|ns| pid_namespace().is_none_or(|here| here != ns));
    let gone = !elsewhere
        && match ProcStat::read(pid) {
            Some(process) => {
                matches!(process.state, 'Z' | 'X' | 'x')
                    || start.is_some_and(|start| process.start_time != Some(start))
            }
            // No such process, or no `/proc` to tell (then only a signal probe can).
            None => {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                    == Err(nix::errno::Errno::ESRCH)
            }
        };
    let pid = pid.unsigned_abs();
    if gone {
        Owner::Gone(pid)
    } else {
        Owner::Alive(pid)
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

    #[test]
    fn the_lock_file_names_this_process_as_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let lock = CoordinatorLock::acquire(dir.path()).unwrap();
        assert_eq!(owner(&lock.file), Owner::Alive(std::process::id()));
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        // Another start time is another process, whatever its id.
        let ns = pid_namespace().unwrap();
        std::fs::write(
            dir.path().join(LOCK_FILE),
            format!("{} 1 {ns}\n", std::process::id()),
        )
        .unwrap();
        assert_eq!(owner(&lock.file), Owner::Gone(std::process::id()));
        // A pid from another pid namespace cannot be judged here: alive.
        std::fs::write(
            dir.path().join(LOCK_FILE),
            format!("{} 1 pid:[1]\n", std::process::id()),
        )
        .unwrap();
        assert_eq!(owner(&lock.file), Owner::Alive(std::process::id()));
        // A record written by an older crumb (a pid alone) is judged by the pid.
        std::fs::write(
            dir.path().join(LOCK_FILE),
            format!("{}\n", std::process::id()),
        )
        .unwrap();
        assert_eq!(owner(&lock.file), Owner::Alive(std::process::id()));
        std::fs::write(dir.path().join(LOCK_FILE), "").unwrap();
        assert_eq!(owner(&lock.file), Owner::Unknown);
    }
}
