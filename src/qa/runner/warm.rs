//! A browser started ahead of QA: when a session spawns the turn whose result runs QA (the build),
//! Chromium starts beside it, so its start is hidden behind the turn instead of added after it.
//!
//! The start takes a machine slot only if one is free at once (it never queues ahead of a QA run
//! that needs one now), records the browser's group in the session's `qa/` like any QA browser,
//! and lives at most [`KEEP_FOR`] unclaimed. Whatever happens next, it is stopped: QA takes it
//! ([`WarmBrowser::take`]) and shuts it down as its own; a session that ends without QA, a
//! shutdown, or a dropped coordinator drops the [`WarmBrowser`], which aborts the start and kills
//! the group (`Chromium`'s drop); a crash leaves the recorded group to `crumb resume`'s reaper.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::pool::{BrowserPool, SlotGuard};
use crate::pipeline::table::{Action, CheckKindSpec, RoleSpec, TransitionTable, Trigger};
use crate::qa::browser::boot::millis;
use crate::qa::browser::launch::Chromium;
use crate::qa::browser::locate;

/// Longest an unclaimed warm browser is kept (a long build turn should not hold a slot idle).
pub(crate) const KEEP_FOR: Duration = Duration::from_secs(60);

/// A started browser with the slot it holds.
pub(crate) struct Warm {
    pub chromium: Chromium,
    pub slot: Option<SlotGuard>,
    /// How long its start took (hidden behind the turn).
    pub start_ms: u64,
    /// How long QA still waited for the start to finish when it took the browser.
    pub waited_ms: u64,
}

struct Starting {
    claim: Option<oneshot::Sender<()>>,
    task: JoinHandle<Option<Warm>>,
}

impl Drop for Starting {
    fn drop(&mut self) {
        // Not claimed: stop the start (or the idle wait); the browser dies with the task.
        self.task.abort();
    }
}

/// At most one browser started ahead of a session's QA. Cheap to clone (shared).
#[derive(Clone, Default)]
pub(crate) struct WarmBrowser(Arc<Mutex<Option<Starting>>>);

impl std::fmt::Debug for WarmBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WarmBrowser")
    }
}

impl WarmBrowser {
    /// Start a browser unless one is starting or waiting already. `record_dir` is the session's
    /// `qa/`, where its group is recorded. Needs a tokio runtime.
    pub(crate) fn start(&self, record_dir: PathBuf) {
        self.start_in(record_dir, BrowserPool::from_env());
    }

    /// [`WarmBrowser::start`] with the slots of `pool`.
    pub(crate) fn start_in(&self, record_dir: PathBuf, pool: BrowserPool) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if held.as_ref().is_some_and(|s| !s.task.is_finished()) {
            return;
        }
        let (claim, claimed) = oneshot::channel();
        let task = tokio::spawn(async move {
            let slot = pool.acquire(Duration::ZERO).await.ok()?;
            let exe = locate::locate().ok()?;
            std::fs::create_dir_all(&record_dir).ok()?;
            let started = Instant::now();
            let chromium = Chromium::launch_recorded(&exe, Some(&record_dir))
                .await
                .ok()?;
            let warm = Warm {
                chromium,
                slot: Some(slot),
                start_ms: millis(started.elapsed()),
                waited_ms: 0,
            };
            // Wait to be claimed; unclaimed for too long, the browser goes (dropped: killed).
            match tokio::time::timeout(KEEP_FOR, claimed).await {
                Ok(Ok(())) => Some(warm),
                _ => None,
            }
        });
        *held = Some(Starting {
            claim: Some(claim),
            task,
        });
    }

    /// The browser started ahead, once its start has finished; `None` if none was started or its
    /// start failed (QA then starts its own, as it would have).
    pub(crate) async fn take(&self) -> Option<Warm> {
        let mut starting = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        if let Some(claim) = starting.claim.take() {
            let _ = claim.send(());
        }
        let waiting = Instant::now();
        let task = &mut starting.task;
        let mut warm = task.await.ok().flatten()?;
        warm.waited_ms = millis(waiting.elapsed());
        Some(warm)
    }

    /// Stop a browser started ahead, if any (the session will not run QA with it).
    pub(crate) fn discard(&self) {
        drop(self.0.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

/// Whether a turn of `role` produces a kind that runs QA in a browser: the turn to start a browser
/// beside. Off with `CRUMB_QA_PRESTART=0`.
pub(crate) fn turn_runs_qa(table: &TransitionTable, role: &RoleSpec) -> bool {
    if std::env::var(PRESTART_ENV).is_ok_and(|v| v.trim() == "0") {
        return false;
    }
    let browser = table.qa.as_ref().is_some_and(|qa| {
        qa.checks.iter().any(|c| {
            matches!(
                c.kind,
                CheckKindSpec::Browser { .. } | CheckKindSpec::AcPredicates
            )
        })
    });
    browser
        && table.routes.iter().any(|route| {
            route.action == Action::RunQa
                && matches!(&route.trigger, Trigger::Kind { kind, from }
                    if role.produces.contains(kind)
                        && from.as_ref().is_none_or(|f| *f == role.id))
        })
}

/// Environment variable turning the browser start ahead of QA off (`0`).
pub(crate) const PRESTART_ENV: &str = "CRUMB_QA_PRESTART";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::reap;

    /// The group recorded in `dir` while one of its processes runs, polled (bounded).
    async fn live_recorded_group(dir: &std::path::Path) -> Option<i32> {
        for _ in 0..300 {
            let found = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .find_map(|e| {
                    let text = std::fs::read_to_string(e.path()).ok()?;
                    let pgid = text.lines().next()?.trim().parse::<i32>().ok()?;
                    (!reap::members_of_group(pgid).is_empty()).then_some(pgid)
                });
            if found.is_some() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    async fn gone(pgid: i32) -> bool {
        for _ in 0..100 {
            reap::reap_chromium_zombies();
            let live = reap::members_of_group(pgid)
                .into_iter()
                .any(|pid| reap::ProcStat::read(pid).is_some_and(|s| s.state != 'Z'));
            if !live {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        false
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_browser_started_ahead_is_killed_when_not_claimed_and_handed_over_when_claimed() {
        locate::locate().expect("these tests need Chromium: ./scripts/ensure-chromium.sh");
        let dir = tempfile::tempdir().unwrap();
        let pool = BrowserPool::at(dir.path().join("run"), 1);

        // The session ends without QA: discarding it kills the group and frees the slot.
        let warm = WarmBrowser::default();
        warm.start_in(dir.path().join("qa"), pool.clone());
        let pgid = live_recorded_group(&dir.path().join("qa"))
            .await
            .expect("the browser started ahead runs in its recorded group");
        warm.discard();
        assert!(
            gone(pgid).await,
            "the discarded browser's group {pgid} survived"
        );
        let slot = pool
            .acquire(Duration::from_secs(5))
            .await
            .expect("its slot is free again");
        drop(slot);

        // Claimed: the same running browser, with its slot, and shut down by its new owner.
        let warm = WarmBrowser::default();
        warm.start_in(dir.path().join("qa2"), pool.clone());
        let taken = warm.take().await.expect("a started browser");
        let pgid = taken.chromium.pid().unwrap();
        assert!(!reap::members_of_group(pgid).is_empty());
        assert!(taken.slot.is_some(), "it holds its machine slot");
        assert!(
            pool.acquire(Duration::ZERO).await.is_err(),
            "the only slot is held"
        );
        taken.chromium.shutdown().await;
        assert!(gone(pgid).await);
        // Dropping the handle of a claimed browser does nothing more.
        drop(warm);
    }
}
