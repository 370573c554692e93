//! The run's one browser slot: Chromium and the artifact server start once, on the first check
//! that needs them, are shared by every browser and predicate check, and are reaped at the end.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crumb_core::digest::sha256_hex;
use futures::StreamExt;
use serde_json::json;

use super::{AC_CONCURRENCY, Shared};
use crate::qa::browser::acceptance;
use crate::qa::browser::boot::millis;
use crate::qa::browser::launch::Chromium;
use crate::qa::browser::locate;
use crate::qa::browser::server::ArtifactServer;
use crate::qa::browser::smoke::{self, ShotTarget, SmokePlan};
use crate::qa::predicate::AcPredicate;
use crate::qa::report::{AcResult, AcStatus, BrowserTimings, CheckResult, CheckStatus, Finding};
use crate::transcript::{ArtifactRef, ArtifactRole};

/// The browser of one run: not started yet, running, or failed to start (every later check
/// gets the same failure).
pub(super) enum BrowserSlot {
    NotStarted,
    Running {
        chromium: Arc<Chromium>,
        server: Arc<ArtifactServer>,
    },
    Failed {
        status: CheckStatus,
        finding: Finding,
    },
}

impl Shared {
    /// Start the browser and the server once; later callers get the same (or the same failure).
    pub(super) async fn browser(
        &self,
    ) -> Result<(Arc<Chromium>, Arc<ArtifactServer>), (CheckStatus, Finding)> {
        let mut slot = self.browser.lock().await;
        if matches!(*slot, BrowserSlot::NotStarted) {
            self.claim_warm().await;
            let started = Instant::now();
            let warm = self
                .warm
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let (outcome, prestarted) = match warm {
                Some(warm) => {
                    let (start_ms, waited_ms) = (warm.start_ms, warm.waited_ms);
                    let served = serve(&self.root, warm.chromium).await;
                    (served, Some((start_ms, waited_ms)))
                }
                None => (start_browser(&self.root, &self.request.out_dir).await, None),
            };
            if outcome.is_ok() {
                self.set_timings(|t| {
                    // QA's own share: what it still waited for the start, and serving.
                    let waited = prestarted.map_or(0, |(_, waited)| waited);
                    t.browser_start_ms = millis(started.elapsed()) + waited;
                    t.prestarted_ms = prestarted.map(|(start, _)| start);
                });
            }
            *slot = match outcome {
                Ok((chromium, server)) => BrowserSlot::Running {
                    chromium: Arc::new(chromium),
                    server: Arc::new(server),
                },
                Err((status, finding)) => BrowserSlot::Failed { status, finding },
            };
        }
        match &*slot {
            BrowserSlot::Running { chromium, server } => {
                Ok((Arc::clone(chromium), Arc::clone(server)))
            }
            BrowserSlot::Failed { status, finding } => Err((*status, finding.clone())),
            BrowserSlot::NotStarted => unreachable!("just started"),
        }
    }

    pub(super) async fn run_browser(
        &self,
        id: &str,
        blocking: bool,
        plan: &SmokePlan,
    ) -> CheckResult {
        let entry = match self.entry_path() {
            Ok(e) => e,
            Err(f) => {
                let mut r = CheckResult::new(id, "browser", blocking, CheckStatus::Pass);
                r.fail(f);
                return r;
            }
        };
        let (chromium, server) = match self.browser().await {
            Ok(pair) => pair,
            Err((status, finding)) => {
                let mut r = CheckResult::new(id, "browser", blocking, status);
                r.findings.push(finding);
                return r;
            }
        };
        let file_name = if self.request.label.is_empty() {
            format!("{id}.png")
        } else {
            format!("{id}-{}.png", self.request.label)
        };
        let shot = ShotTarget {
            file: self.request.out_dir.join(file_name),
        };
        let (result, output) = smoke::run(
            id,
            blocking,
            &chromium,
            &server.origin(),
            &server.url(&entry),
            plan,
            Some(&shot),
        )
        .await;
        if let Some(page) = output.booted {
            *self.booted.lock().await = Some(page);
        }
        if let Some((path, bytes)) = output.screenshot {
            let shown = path
                .strip_prefix(&self.request.report_base)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let sha256 = sha256_hex(&bytes);
            let artifact = ArtifactRef {
                path: shown,
                sha256,
                role: Some(ArtifactRole::Screenshot),
            };
            *self
                .screenshot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(artifact);
        }
        result
    }

    pub(super) async fn run_predicates(
        &self,
        id: &str,
        blocking: bool,
        limit: Duration,
    ) -> CheckResult {
        let started = Instant::now();
        let mut result = CheckResult::new(id, "ac_predicates", blocking, CheckStatus::Pass);
        for problem in &self.request.predicate_problems {
            result.fail(Finding::new("invalid_predicate", problem.clone()));
        }
        let predicates = &self.request.predicates;
        if predicates.is_empty() {
            if result.status == CheckStatus::Pass {
                result.status = CheckStatus::Skipped;
            }
            result.details = json!({ "note": "the spec supplied no acceptance predicates" });
            return result;
        }
        let prepared = match self.entry_path() {
            Ok(entry) => self.browser().await.map(|pair| (entry, pair)),
            Err(f) => Err((CheckStatus::Fail, f)),
        };
        let (entry, (chromium, server)) = match prepared {
            Ok(ready) => ready,
            Err((status, finding)) => {
                // Nothing can be verified: every AC is SKIP with the reason, and the check carries
                // the failure (so a blocking AC check fails QA — an unverified AC is never a pass).
                let reason = format!("not run: {}", finding.message);
                self.record_all(predicates.iter().map(|p| AcResult {
                    ac_id: p.id.clone(),
                    status: AcStatus::Skip,
                    reason: reason.clone(),
                    runtime_ms: 0,
                }));
                result.status = if status == CheckStatus::Fail {
                    CheckStatus::Fail
                } else {
                    status
                };
                result.findings.push(finding);
                return result;
            }
        };
        let url = server.url(&entry);
        // First, in declaration order, in the page the browser check booted and settled: one page
        // load for all of them. An AC that does not pass there is run again on its own (below),
        // so a failure is never an effect of sharing the page with the ACs before it.
        let mut shared_passes: Vec<Option<AcResult>> = vec![None; predicates.len()];
        let booted = self.booted.lock().await.take();
        if let Some(booted) = booted {
            for (slot, ac) in shared_passes.iter_mut().zip(predicates) {
                let left = limit.saturating_sub(started.elapsed());
                if left.is_zero() {
                    break;
                }
                let outcome = acceptance::run_in(&booted.page, ac, left).await;
                if outcome.status == AcStatus::Pass {
                    *slot = Some(outcome);
                }
            }
            if shared_passes.iter().any(Option::is_none) {
                // Its game loop would compete with the fresh contexts below.
                booted.close().await;
            }
            // Otherwise the page goes with the browser's group: no round trip to close it.
        }
        // Each remaining AC has its own browser context, so they can run side by side; a small
        // bound keeps two cores from being swamped (results stay in declaration order).
        let chromium = &chromium;
        let url = &url;
        let jobs: Vec<futures::future::BoxFuture<'_, AcResult>> = predicates
            .iter()
            .zip(shared_passes)
            .map(|(ac, passed)| -> futures::future::BoxFuture<'_, AcResult> {
                match passed {
                    Some(result) => Box::pin(std::future::ready(result)),
                    None => Box::pin(self.run_ac(chromium, url, ac, limit, started)),
                }
            })
            .collect();
        let mut outcomes = futures::stream::iter(jobs).buffered(AC_CONCURRENCY);
        let mut not_run = Vec::new();
        while let Some(outcome) = outcomes.next().await {
            let line = format!("{}: {}", outcome.ac_id, outcome.reason);
            match outcome.status {
                AcStatus::Pass => {}
                AcStatus::Fail => result.fail(Finding::new("ac_failed", line)),
                AcStatus::Skip => not_run.push(Finding::new("ac_not_run", line)),
            }
            self.record_all(std::iter::once(outcome));
        }
        // An AC the browser could not run says nothing about the game; a failed one does.
        if !not_run.is_empty() && result.status == CheckStatus::Pass {
            result.status = CheckStatus::Unavailable;
        }
        result.findings.extend(not_run);
        let passed = self.ac_results.lock().map_or(0, |r| {
            r.iter().filter(|a| a.status == AcStatus::Pass).count()
        });
        result.details = json!({ "passed": passed, "total": predicates.len() });
        result
    }

    async fn run_ac(
        &self,
        chromium: &Chromium,
        url: &str,
        ac: &AcPredicate,
        limit: Duration,
        started: Instant,
    ) -> AcResult {
        let left = limit.saturating_sub(started.elapsed());
        if left.is_zero() {
            return AcResult {
                ac_id: ac.id.clone(),
                status: AcStatus::Fail,
                reason: "not run: no time left".into(),
                runtime_ms: 0,
            };
        }
        acceptance::run_one(chromium, url, &self.boot_plan, ac, left).await
    }

    fn set_timings(&self, set: impl FnOnce(&mut BrowserTimings)) {
        let mut timings = self
            .timings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        set(timings.get_or_insert_with(BrowserTimings::default));
    }

    fn record_all(&self, results: impl Iterator<Item = AcResult>) {
        self.ac_results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(results);
    }

    /// Stop the browser and reap it. Returns its version.
    pub(super) async fn finish(&self) -> Option<(String, i32)> {
        // A page still open goes with the browser's group; closing it first would only cost a
        // round trip.
        drop(self.booted.lock().await.take());
        let slot = std::mem::replace(&mut *self.browser.lock().await, BrowserSlot::NotStarted);
        let BrowserSlot::Running { chromium, server } = slot else {
            return None;
        };
        drop(server);
        let facts = (
            chromium.version.clone().unwrap_or_default(),
            chromium.pid().unwrap_or(0),
        );
        // A check cancelled by a timeout releases its handle when its task is dropped, which
        // happens on the runtime's next turns; wait for that briefly so the shutdown can reap.
        let mut chromium = chromium;
        for _ in 0..100 {
            match Arc::try_unwrap(chromium) {
                Ok(owned) => {
                    let stopping = Instant::now();
                    owned.shutdown().await;
                    self.set_timings(|t| t.shutdown_ms = millis(stopping.elapsed()));
                    return Some(facts);
                }
                Err(still_shared) => chromium = still_shared,
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Still held: dropping the last handle kills the group synchronously.
        drop(chromium);
        Some(facts)
    }
}

/// Find and launch Chromium (its group recorded in `out_dir`, a session's `qa/`) and serve the
/// artifacts folder. Every failure here is the machine's (no browser, a launch that failed or
/// timed out, no loopback port): the checks could not run.
async fn start_browser(
    root: &Path,
    out_dir: &Path,
) -> Result<(Chromium, ArtifactServer), (CheckStatus, Finding)> {
    let exe = locate::locate().map_err(|e| {
        (
            CheckStatus::Unavailable,
            Finding::new("chromium_unavailable", e.to_string()),
        )
    })?;
    let server = ArtifactServer::start(root).await.map_err(|e| {
        (
            CheckStatus::Unavailable,
            Finding::new(
                "server_failed",
                format!("could not serve the artifacts: {e}"),
            ),
        )
    })?;
    let chromium = Chromium::launch_recorded(&exe, Some(out_dir))
        .await
        .map_err(|e| {
            (
                CheckStatus::Unavailable,
                Finding::new("browser_launch_failed", e.to_string()),
            )
        })?;
    Ok((chromium, server))
}

/// Serve the artifacts folder for a browser started ahead.
async fn serve(
    root: &Path,
    chromium: Chromium,
) -> Result<(Chromium, ArtifactServer), (CheckStatus, Finding)> {
    let server = ArtifactServer::start(root).await.map_err(|e| {
        (
            CheckStatus::Unavailable,
            Finding::new(
                "server_failed",
                format!("could not serve the artifacts: {e}"),
            ),
        )
    })?;
    Ok((chromium, server))
}
