//! The machine's browser slots: at most N headless Chromiums run QA at once, across every crumb
//! process of the user (eight sessions at once on two cores otherwise time out launches and page
//! loads, and an overloaded machine would be routed like a broken build).
//!
//! A slot is an exclusive lock on `<crumb home>/run/browser-slot-<i>.lock` (`flock` through
//! `std::fs::File::try_lock`), so the kernel releases it whenever its holder exits, crash
//! included: nothing to clean up, no stale slots. The home is `$CRUMB_HOME`, else `~/.crumb`
//! (`--home` does not move it: the pool is the machine's, not a session's). N is
//! `$CRUMB_BROWSER_SLOTS`, else the number of CPUs. Waiting for a slot is not part of any check's
//! timeout; it is bounded by [`MAX_WAIT`], after which the browser checks could not run.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::home::CrumbHome;
use crate::qa::browser::boot::millis;
use crate::qa::report::SlotFacts;

/// Environment variable overriding the number of slots.
pub(crate) const SLOTS_ENV: &str = "CRUMB_BROWSER_SLOTS";
/// Longest wait for a free slot.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(600);
/// How often a waiting run tries the slots again.
const RETRY_EVERY: Duration = Duration::from_millis(100);

/// The slots of this machine.
#[derive(Debug, Clone)]
pub(crate) struct BrowserPool {
    dir: PathBuf,
    slots: usize,
}

/// Why no slot was taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PoolError {
    #[error("cannot use the browser slots in {dir}: {source}")]
    Io { dir: String, source: std::io::Error },
    #[error(
        "all {slots} browser slots of this machine stayed busy for {} s",
        waited.as_secs()
    )]
    Busy { slots: usize, waited: Duration },
}

/// A held slot; dropping it frees the slot.
#[derive(Debug)]
pub(crate) struct SlotGuard {
    _lock: File,
    index: usize,
    slots: usize,
    waited: Duration,
    acquired_at_ms: u64,
}

impl SlotGuard {
    /// Free the slot now and say which one it was and when it was held.
    pub(crate) fn release(self) -> SlotFacts {
        let facts = SlotFacts {
            index: self.index,
            slots: self.slots,
            waited_ms: millis(self.waited),
            acquired_at_ms: self.acquired_at_ms,
            released_at_ms: epoch_ms(),
        };
        drop(self);
        facts
    }
}

impl BrowserPool {
    /// The pool of this machine's user: `$CRUMB_HOME/run` (else `~/.crumb/run`, else the temp
    /// folder), with `$CRUMB_BROWSER_SLOTS` or one slot per CPU.
    pub(crate) fn from_env() -> Self {
        let dir = CrumbHome::from_env().map_or_else(
            |_| std::env::temp_dir().join("crumb-run"),
            |home| home.root().join("run"),
        );
        let slots = std::env::var(SLOTS_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from));
        BrowserPool::at(dir, slots)
    }

    /// A pool of `slots` (at least one) in `dir`.
    pub(crate) fn at(dir: PathBuf, slots: usize) -> Self {
        BrowserPool {
            dir,
            slots: slots.max(1),
        }
    }

    /// Take a free slot, waiting at most `max_wait` for one.
    pub(crate) async fn acquire(&self, max_wait: Duration) -> Result<SlotGuard, PoolError> {
        let io = |source| PoolError::Io {
            dir: self.dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let started = Instant::now();
        loop {
            for index in 0..self.slots {
                let path = self.dir.join(format!("browser-slot-{index}.lock"));
                let file = OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&path)
                    .map_err(io)?;
                match file.try_lock() {
                    Ok(()) => {
                        return Ok(SlotGuard {
                            _lock: file,
                            index,
                            slots: self.slots,
                            waited: started.elapsed(),
                            acquired_at_ms: epoch_ms(),
                        });
                    }
                    Err(TryLockError::WouldBlock) => {}
                    Err(TryLockError::Error(e)) => return Err(io(e)),
                }
            }
            let waited = started.elapsed();
            if waited >= max_wait {
                return Err(PoolError::Busy {
                    slots: self.slots,
                    waited,
                });
            }
            tokio::time::sleep(RETRY_EVERY.min(max_wait.saturating_sub(waited))).await;
        }
    }
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_slot_is_exclusive_until_released_even_within_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let pool = BrowserPool::at(dir.path().join("run"), 1);
        let held = pool.acquire(Duration::ZERO).await.unwrap();
        let busy = pool.acquire(Duration::from_millis(250)).await.unwrap_err();
        assert!(matches!(busy, PoolError::Busy { slots: 1, .. }), "{busy}");
        let facts = held.release();
        assert_eq!((facts.index, facts.slots), (0, 1));
        assert!(facts.released_at_ms >= facts.acquired_at_ms);
        let again = pool.acquire(Duration::ZERO).await.unwrap();
        assert_eq!(again.index, 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn two_slots_hand_out_two_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let pool = BrowserPool::at(dir.path().to_path_buf(), 2);
        let a = pool.acquire(Duration::ZERO).await.unwrap();
        let b = pool.acquire(Duration::ZERO).await.unwrap();
        assert_eq!((a.index, b.index), (0, 1));
        assert!(pool.acquire(Duration::ZERO).await.is_err());
    }
}
