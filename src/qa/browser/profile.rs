//! QA browser profiles: one fresh folder per browser, in `/dev/shm` when it can (memory: on slow
//! disks a profile's few hundred files cost hundreds of milliseconds per run), else in the temp
//! folder. Chromium's own temp folder is inside it, so nothing else of a browser is left outside.
//!
//! A SIGKILL runs no `Drop`: a QA run killed before its browser's group was recorded, or killed
//! outside any session, left its profile for good. So each profile is named after its owner —
//! `crumb-qa-profile-<pid>-<start time>-<n>`, the process that made it, by pid and start time
//! (`/proc/<pid>/stat`; a reused pid has another start time) — and every new profile, and every
//! coordinator start, first sweeps away the profiles whose owner is gone, with the orphaned
//! browser still on one (a process carrying the profile in `CRUMB_QA_PROFILE`: nobody drives it
//! any more). A name without an owner (an older crumb's) is swept once it is ten minutes old and no
//! process uses it.
//! A profile whose owner runs is never touched.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::process::reap::{self, ProcStat};

/// How every profile folder's name starts; a sweep or a reaper removes nothing else.
pub(crate) const PROFILE_PREFIX: &str = "crumb-qa-profile-";
/// Set on the browser (and its group's holder) to its profile folder: how a reaper recognises
/// the recorded group as ours, and how a sweep sees the profile is still in use.
pub(crate) const PROFILE_ENV: &str = "CRUMB_QA_PROFILE";

/// How old a profile without an owner in its name (an older crumb's) must be to be swept.
const UNOWNED_AGE: Duration = Duration::from_secs(600);
/// Longest wait for the orphaned browser on a swept profile to go.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// Profiles this process has made: the last part of each one's name.
static MADE: AtomicU64 = AtomicU64::new(0);

/// A fresh per-run profile folder, removed on drop (every exit path, failed launches included).
pub(crate) struct ProfileDir(PathBuf);

impl ProfileDir {
    /// Sweep what dead owners left, then make a profile owned by this process.
    pub(crate) fn create() -> std::io::Result<Self> {
        sweep();
        // Short: Chromium's singleton socket lies a few folders below and a socket path has at
        // most 108 bytes.
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let name = format!("{PROFILE_PREFIX}{}-{n}", Owner::me().tag());
        let shm = Path::new("/dev/shm").join(&name);
        if std::fs::create_dir(&shm).is_ok() {
            return Ok(ProfileDir(shm));
        }
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir(&dir)?;
        Ok(ProfileDir(dir))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The browser's temp folder, inside the profile (made on first use).
    pub(crate) fn temp(&self) -> PathBuf {
        let temp = self.0.join("tmp");
        let _ = std::fs::create_dir_all(&temp);
        temp
    }
}

impl Drop for ProfileDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The process a profile belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// `starttime` of `/proc/<pid>/stat`; 0 when it cannot be read.
    start: u64,
}

impl Owner {
    fn me() -> Owner {
        let pid = std::process::id();
        let start = i32::try_from(pid)
            .ok()
            .and_then(ProcStat::read)
            .and_then(|stat| stat.start_time)
            .unwrap_or(0);
        Owner { pid, start }
    }

    fn tag(self) -> String {
        format!("{}-{}", self.pid, self.start)
    }

    /// The owner named by a profile folder's name, if it names one (older names do not).
    fn of(name: &str) -> Option<Owner> {
        let mut parts = name.strip_prefix(PROFILE_PREFIX)?.splitn(3, '-');
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok()?;
        parts.next()?;
        Some(Owner { pid, start })
    }

    /// Whether the owner still runs: the same pid with the same start time, not a zombie. Without
    /// `/proc` nothing can be told, and a profile is kept.
    fn alive(self) -> bool {
        if !Path::new("/proc/self/stat").exists() {
            return true;
        }
        let Ok(pid) = i32::try_from(self.pid) else {
            return false;
        };
        ProcStat::read(pid)
            .is_some_and(|stat| stat.state != 'Z' && stat.start_time.unwrap_or(0) == self.start)
    }
}

/// The folders profiles are made in.
fn roots() -> Vec<PathBuf> {
    vec![PathBuf::from("/dev/shm"), std::env::temp_dir()]
}

/// Remove every profile in `/dev/shm` and the temp folder whose owner is gone and that no live
/// process uses. Returns how many were removed.
pub(crate) fn sweep() -> usize {
    sweep_in(&roots())
}

/// SIGKILL every process carrying `marker` and wait (bounded) until none does, so the profile
/// can be removed with nothing writing into it.
fn stop_users(marker: &str) {
    let deadline = Instant::now() + STOP_WAIT;
    while crate::process::group::kill_marked(marker) > 0 && Instant::now() < deadline {
        reap::reap_chromium_zombies();
        // SIGKILLed processes go within milliseconds: look again soon.
        std::thread::sleep(Duration::from_millis(5));
    }
    reap::reap_chromium_zombies();
}

/// [`sweep`] over the given folders.
pub(crate) fn sweep_in(roots: &[PathBuf]) -> usize {
    let mut removed = 0;
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(PROFILE_PREFIX) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            let marker = format!("{PROFILE_ENV}={}", path.display());
            match Owner::of(&name) {
                Some(owner) if owner.alive() => continue,
                // Its owner is gone: a browser still on it is an orphan nobody drives.
                Some(_) => stop_users(&marker),
                // An older crumb's name, without an owner: gone once it is old and nothing uses
                // it (a fresh one may be a launch under way).
                None => {
                    let old = entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|at| at.elapsed().ok())
                        .is_some_and(|age| age > UNOWNED_AGE);
                    if !old || !reap::pids_carrying(&marker).is_empty() {
                        continue;
                    }
                }
            }
            if std::fs::remove_dir_all(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{Owner, PROFILE_PREFIX, sweep_in};
    use crate::process::reap::ProcStat;

    fn profile(root: &std::path::Path, owner: &str) -> PathBuf {
        let dir = root.join(format!(
            "{PROFILE_PREFIX}{owner}-{}",
            ulid::Ulid::new().0 % 1000
        ));
        std::fs::create_dir_all(dir.join("tmp/org.chromium.Chromium.x")).unwrap();
        dir
    }

    #[test]
    fn a_profile_whose_owner_is_gone_is_swept_and_one_in_use_is_kept() {
        let root = tempfile::tempdir().unwrap();
        let mine = profile(root.path(), &Owner::me().tag());
        // A real process that has exited (and been reaped): its pid names nobody now.
        let mut child = crate::process::command::blocking("true").spawn().unwrap();
        let pid = child.id();
        let start = ProcStat::read(i32::try_from(pid).unwrap()).and_then(|s| s.start_time);
        child.wait().unwrap();
        let dead = profile(root.path(), &format!("{pid}-{}", start.unwrap_or(1)));
        // This process's pid with another start time: a reused pid is not the owner.
        let reused = profile(root.path(), &format!("{}-1", std::process::id()));
        let older = root
            .path()
            .join(format!("{PROFILE_PREFIX}{}", ulid::Ulid::new()));
        std::fs::create_dir(&older).unwrap();
        let fresh_older = root
            .path()
            .join(format!("{PROFILE_PREFIX}{}", ulid::Ulid::new()));
        std::fs::create_dir(&fresh_older).unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(&older)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        let unrelated = root.path().join("crumb-qa-something-else");
        std::fs::create_dir(&unrelated).unwrap();

        assert_eq!(sweep_in(&[root.path().to_path_buf()]), 3);
        assert!(mine.is_dir(), "a live owner's profile is kept");
        assert!(unrelated.is_dir(), "only profiles are swept");
        assert!(
            fresh_older.is_dir(),
            "an unowned profile may be a launch under way"
        );
        for gone in [dead, reused, older] {
            assert!(!gone.exists(), "{gone:?} was left");
        }
    }

    #[test]
    fn owners_are_read_back_from_names() {
        let me = Owner::me();
        assert_eq!(
            Owner::of(&format!("{PROFILE_PREFIX}{}-7", me.tag())),
            Some(me)
        );
        assert_eq!(
            Owner::of(&format!("{PROFILE_PREFIX}01KQMS9E5M1Z7TEF32E81YXAGT")),
            None
        );
        assert!(me.alive());
    }
}
