//! What a `crumb qa` outside any session leaves should it be killed: its browser and command
//! groups are recorded in its output folder like a session's, but no `crumb resume` ever comes
//! for that folder. So each standalone run registers itself under `$CRUMB_HOME/run/qa/<ulid>/`
//! (a lock held for its whole life, with the owner recorded as for a coordinator, and the path of
//! its output folder), and every standalone run first reaps the output folders of registrations
//! whose owner is dead, then removes them.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::runtime::lock::{self, CoordinatorLock};
use crate::runtime::orphans;

/// The file in a registration that names the output folder.
const OUT_DIR_FILE: &str = "out_dir";
/// Registrations being written are under this prefix until renamed into place; reapers skip them.
const TMP_PREFIX: &str = ".tmp-";

/// A live standalone run's registration; dropping it removes it (the run ended normally).
pub(crate) struct Registration {
    dir: PathBuf,
    lock: Option<CoordinatorLock>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            lock.release();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where the registrations of `home` live.
fn registry(home: &Path) -> PathBuf {
    home.join("run").join("qa")
}

/// Register a standalone run writing its records to `out_dir`. Built under a temporary name and
/// renamed into place only once locked, so a reaper never sees it unlocked.
pub(crate) fn register(home: &Path, out_dir: &Path) -> std::io::Result<Registration> {
    let registry = registry(home);
    std::fs::create_dir_all(&registry)?;
    let name = ulid::Ulid::new().to_string();
    let tmp = registry.join(format!("{TMP_PREFIX}{name}"));
    std::fs::create_dir(&tmp)?;
    let lock = CoordinatorLock::acquire(&tmp).map_err(std::io::Error::other)?;
    std::fs::write(tmp.join(OUT_DIR_FILE), out_dir.as_os_str().as_bytes())?;
    let dir = registry.join(&name);
    std::fs::rename(&tmp, &dir)?;
    Ok(Registration {
        lock: Some(lock.moved_to(&dir)),
        dir,
    })
}

/// Reap the output folders of every registration whose run died, and remove those
/// registrations. Returns how many live groups were killed.
pub(crate) fn reap_dead(home: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(registry(home)) else {
        return 0;
    };
    let mut killed = 0;
    for entry in entries.filter_map(Result::ok) {
        let dir = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with(TMP_PREFIX) || !dir.is_dir() || lock::is_held(&dir) {
            continue;
        }
        // Taking its lock makes the reap ours alone (another run may be looking too).
        let Ok(taken) = CoordinatorLock::acquire(&dir) else {
            continue;
        };
        if let Ok(bytes) = std::fs::read(dir.join(OUT_DIR_FILE)) {
            let out_dir = PathBuf::from(std::ffi::OsStr::from_bytes(&bytes));
            killed += orphans::reap_qa_records(&out_dir);
        }
        taken.release();
        let _ = std::fs::remove_dir_all(&dir);
    }
    killed
}
