//! Running a pipeline's QA block: every declared check in order, under one deadline.
//!
//! Each check runs in its own task, so a panic becomes a failing check instead of a missing
//! result; each is bounded by its own timeout and by what is left of `qa.timeout`. The browser is
//! started once, beside the static checks (or on first need), and on every exit path (pass, failure, timeout) its process group
//! is killed and reaped before the report is returned.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crumb_core::digest::sha256_hex;
use tokio::task::JoinHandle;

use super::browser::boot::{BootPlan, millis};
use super::browser::smoke::{BootedPage, SmokePlan};
use super::command_check::{self, CommandCheck};
use super::predicate::AcPredicate;
use super::report::{
    AcResult, AcStatus, BrowserTimings, CheckResult, CheckStatus, EntryFacts, Finding, QaReport,
};
use super::{confine, file_check, html_check, size_budget};
use crate::pipeline::table::{CheckKindSpec, CheckSpec, QaSpec};
use crate::transcript::ArtifactRef;

pub(crate) mod pool;
mod slot;
pub(crate) mod warm;
use pool::{BrowserPool, PoolError};
use slot::BrowserSlot;
use warm::{Warm, WarmBrowser};

/// Acceptance predicates evaluated at the same time when each needs its own browser context.
const AC_CONCURRENCY: usize = 3;

/// What to run QA on, and where to put what it produces.
#[derive(Debug, Clone)]
pub(crate) struct QaRequest {
    /// The folder the checks' paths are relative to (a session's `artifacts/`).
    pub artifacts_dir: PathBuf,
    /// Where screenshots are written (a session's `qa/`).
    pub out_dir: PathBuf,
    /// Artifact paths in the report are relative to this folder (the session folder).
    pub report_base: PathBuf,
    /// Distinguishes files of successive runs, e.g. the effect id; empty for none.
    pub label: String,
    /// Acceptance predicates from the spec.
    pub predicates: Vec<AcPredicate>,
    /// Why some predicates of the spec were refused (reported by the `ac_predicates` check).
    pub predicate_problems: Vec<String>,
}

/// Run QA to completion on a fresh multi-threaded runtime (for callers without one).
pub(crate) fn run_blocking(spec: &QaSpec, request: &QaRequest) -> QaReport {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(run(spec, request)),
        Err(e) => failed_to_start(spec, &format!("could not start the async runtime: {e}")),
    }
}

/// Run every check of `spec` against `request`. Always returns a report.
///
/// Checks that do not need the browser run first, one after another, in declaration order, while
/// the browser starts beside them; then the browser check, and the acceptance predicates in the
/// page it booted and settled (see `Shared::run_predicates`). Results keep declaration order.
/// The browser runs in one of the machine's slots ([`pool`]); the wait for it is added to the
/// deadline, so a check's time starts when it has a browser to run in.
pub(crate) async fn run(spec: &QaSpec, request: &QaRequest) -> QaReport {
    run_warm(spec, request, None).await
}

/// [`run`], with a browser started ahead (see [`warm`]) used instead of starting one: its start
/// is waited for beside the static checks, as a start of its own would be.
pub(crate) async fn run_warm(
    spec: &QaSpec,
    request: &QaRequest,
    warm: Option<WarmBrowser>,
) -> QaReport {
    let started = Instant::now();
    let mut deadline = started + Duration::from_millis(spec.timeout_ms);
    let shared = Arc::new(Shared::new(spec, request, warm));
    let needs_browser = |c: &CheckSpec| {
        matches!(
            c.kind,
            CheckKindSpec::Browser { .. } | CheckKindSpec::AcPredicates
        )
    };
    let mut slots: Vec<Option<(CheckResult, bool)>> = vec![None; spec.checks.len()];
    let static_checks = async {
        for (i, check) in spec
            .checks
            .iter()
            .enumerate()
            .filter(|(_, c)| !needs_browser(c))
        {
            slots[i] = Some(run_bounded(&shared, check, deadline, spec.timeout_ms).await);
        }
    };
    // Meanwhile take a browser slot and start Chromium, so its start overlaps the static checks
    // (bounded by the run's deadline; a start that fails is reported by the browser checks). An
    // entry a static check has yet to produce (a `command` that builds it) waits for them.
    let early = shared.entry_path().is_ok();
    let prelaunch = async {
        if !early {
            return (None, Duration::ZERO);
        }
        let waiting = Instant::now();
        let slot = shared.take_browser_slot(spec).await;
        let waited = waiting.elapsed();
        if slot.is_some() {
            let left = (deadline + waited).saturating_duration_since(Instant::now());
            let _ = tokio::time::timeout(left, shared.browser()).await;
        }
        (slot, waited)
    };
    let ((), (mut slot, mut waited)) = tokio::join!(static_checks, prelaunch);
    if !early {
        let waiting = Instant::now();
        slot = shared.take_browser_slot(spec).await;
        waited = waiting.elapsed();
    }
    deadline += waited;
    // The browser check first: it boots and settles the page the predicates then run in.
    let mut browser_checks: Vec<(usize, &CheckSpec)> = spec
        .checks
        .iter()
        .enumerate()
        .filter(|(_, c)| needs_browser(c))
        .collect();
    browser_checks.sort_by_key(|(_, c)| matches!(c.kind, CheckKindSpec::AcPredicates));
    for (i, check) in browser_checks {
        slots[i] = Some(run_bounded(&shared, check, deadline, spec.timeout_ms).await);
    }
    let mut timed_out = false;
    let checks = slots
        .into_iter()
        .zip(&spec.checks)
        .map(|(slot, check)| {
            let (result, hit_deadline) =
                slot.unwrap_or_else(|| (not_run(check, spec.timeout_ms), true));
            timed_out |= hit_deadline;
            result
        })
        .collect();
    let browser = shared.finish().await;
    let browser_slot = slot.map(pool::SlotGuard::release);
    let timings = *shared
        .timings
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let ac_results = shared.take_ac_results();
    let screenshot = shared.take_screenshot();
    QaReport {
        checks,
        ac_results,
        screenshot,
        runtime_ms: millis(started.elapsed()),
        timed_out,
        browser_version: browser
            .as_ref()
            .map(|(version, _)| version.clone())
            .filter(|v| !v.is_empty()),
        browser_pid: browser.map(|(_, pid)| pid).filter(|&pid| pid > 0),
        entry: entry_facts(spec, request),
        browser_slot,
        timings,
    }
}

/// Run one check in its own task under its timeout and what is left of the run's deadline.
/// The flag says whether the run's deadline (not the check's own timeout) stopped it.
async fn run_bounded(
    shared: &Arc<Shared>,
    check: &CheckSpec,
    deadline: Instant,
    run_timeout_ms: u64,
) -> (CheckResult, bool) {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return (not_run(check, run_timeout_ms), true);
    }
    let own = check.timeout_ms.map(Duration::from_millis);
    let limit = own.map_or(left, |t| t.min(left));
    let handle = spawn_check(Arc::clone(shared), check.clone(), limit);
    if let Ok(result) = tokio::time::timeout(limit, wait_isolated(handle, check)).await {
        return (result, false);
    }
    let run_deadline_hit = own.is_none_or(|t| t >= left);
    let mut r = CheckResult::new(
        &check.id,
        kind_name(&check.kind),
        check.blocking,
        CheckStatus::Timeout,
    );
    let why = if run_deadline_hit {
        format!("QA timed out after {run_timeout_ms} ms while this check was running")
    } else {
        format!(
            "the check did not finish within its timeout of {} ms",
            limit.as_millis()
        )
    };
    r.findings.push(Finding::new("check_timeout", why));
    r.runtime_ms = millis(limit);
    (r, run_deadline_hit)
}

/// A report for a run that could not even start.
fn failed_to_start(spec: &QaSpec, why: &str) -> QaReport {
    let checks = spec
        .checks
        .iter()
        .map(|c| {
            let mut r = CheckResult::new(
                &c.id,
                kind_name(&c.kind),
                c.blocking,
                CheckStatus::Unavailable,
            );
            r.findings.push(Finding::new("qa_error", why));
            r
        })
        .collect();
    QaReport {
        checks,
        ac_results: Vec::new(),
        screenshot: None,
        runtime_ms: 0,
        timed_out: false,
        browser_version: None,
        browser_pid: None,
        entry: None,
        browser_slot: None,
        timings: None,
    }
}

fn not_run(check: &CheckSpec, timeout_ms: u64) -> CheckResult {
    let mut r = CheckResult::new(
        &check.id,
        kind_name(&check.kind),
        check.blocking,
        CheckStatus::Timeout,
    );
    r.findings.push(Finding::new(
        "check_timeout",
        format!("not run: QA timed out after {timeout_ms} ms"),
    ));
    r
}

/// The wire name of a check kind.
pub(crate) fn kind_name(kind: &CheckKindSpec) -> &'static str {
    match kind {
        CheckKindSpec::File { .. } => "file",
        CheckKindSpec::MaxBytes { .. } => "max_bytes",
        CheckKindSpec::Html { .. } => "html",
        CheckKindSpec::Command { .. } => "command",
        CheckKindSpec::Browser { .. } => "browser",
        CheckKindSpec::AcPredicates => "ac_predicates",
    }
}

/// Await a check's task; a panic (or cancellation) becomes an `error` result.
async fn wait_isolated(handle: JoinHandle<CheckResult>, check: &CheckSpec) -> CheckResult {
    let mut guard = AbortOnDrop(Some(handle));
    let Some(handle) = guard.0.as_mut() else {
        unreachable!("set above")
    };
    let outcome = handle.await;
    guard.0 = None;
    match outcome {
        Ok(result) => result,
        Err(err) => {
            let message = if err.is_panic() {
                panic_message(&*err.into_panic())
            } else {
                "the check was cancelled".into()
            };
            let mut r = CheckResult::new(
                &check.id,
                kind_name(&check.kind),
                check.blocking,
                CheckStatus::Error,
            );
            r.findings.push(Finding::new(
                "check_panicked",
                format!("the check crashed: {message}"),
            ));
            r
        }
    }
}

/// Aborts the task if the waiting future is dropped (its timeout fired).
struct AbortOnDrop(Option<JoinHandle<CheckResult>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            h.abort();
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn spawn_check(shared: Arc<Shared>, check: CheckSpec, limit: Duration) -> JoinHandle<CheckResult> {
    tokio::spawn(async move {
        let started = Instant::now();
        let mut result = shared.run_check(&check, limit).await;
        result.runtime_ms = millis(started.elapsed());
        result
    })
}

/// State shared by the checks of one run.
struct Shared {
    root: PathBuf,
    request: QaRequest,
    entry: Option<String>,
    boot_plan: BootPlan,
    browser: tokio::sync::Mutex<BrowserSlot>,
    /// The page the browser check booted, kept for the acceptance predicates.
    booted: tokio::sync::Mutex<Option<BootedPage>>,
    ac_results: Mutex<Vec<AcResult>>,
    screenshot: Mutex<Option<ArtifactRef>>,
    /// Set once a browser was started.
    timings: Mutex<Option<BrowserTimings>>,
    /// A browser started ahead of this run, until the run claims it ...
    warm_pending: tokio::sync::Mutex<Option<WarmBrowser>>,
    /// ... and once claimed, until the run takes it (with its slot).
    warm: Mutex<Option<Warm>>,
}

impl Shared {
    fn new(spec: &QaSpec, request: &QaRequest, warm: Option<WarmBrowser>) -> Self {
        let boot_plan = spec
            .checks
            .iter()
            .find_map(|c| match &c.kind {
                CheckKindSpec::Browser {
                    wait_for,
                    keys,
                    clicks,
                    ..
                } => Some(BootPlan {
                    wait_for: wait_for.clone(),
                    keys: keys.clone(),
                    clicks: clicks.clone(),
                }),
                _ => None,
            })
            .unwrap_or_else(|| BootPlan {
                wait_for: "canvas".into(),
                ..BootPlan::default()
            });
        Shared {
            root: request.artifacts_dir.clone(),
            request: request.clone(),
            entry: spec.entry.clone(),
            boot_plan,
            browser: tokio::sync::Mutex::new(BrowserSlot::NotStarted),
            booted: tokio::sync::Mutex::new(None),
            ac_results: Mutex::new(Vec::new()),
            screenshot: Mutex::new(None),
            timings: Mutex::new(None),
            warm_pending: tokio::sync::Mutex::new(warm),
            warm: Mutex::new(None),
        }
    }

    /// Wait for the browser started ahead, if there is one, and keep it for this run.
    pub(super) async fn claim_warm(&self) {
        let pending = self.warm_pending.lock().await.take();
        if let Some(pending) = pending
            && let Some(warm) = pending.take().await
        {
            *self
                .warm
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(warm);
        }
    }

    async fn run_check(&self, check: &CheckSpec, limit: Duration) -> CheckResult {
        let (id, blocking, root) = (check.id.as_str(), check.blocking, self.root.as_path());
        match &check.kind {
            CheckKindSpec::File {
                path,
                min_bytes,
                max_bytes,
            } => file_check::run(id, blocking, root, path, *min_bytes, *max_bytes),
            CheckKindSpec::MaxBytes { glob, limit_bytes } => {
                size_budget::run(id, blocking, root, glob, *limit_bytes)
            }
            CheckKindSpec::Html { path } => html_check::run(id, blocking, root, path),
            CheckKindSpec::Command {
                argv,
                cwd,
                env,
                expect_exit,
            } => {
                let cmd = CommandCheck {
                    id,
                    blocking,
                    argv,
                    cwd: cwd.as_deref(),
                    env,
                    expect_exit: *expect_exit,
                    timeout: limit,
                    record_dir: Some(&self.request.out_dir),
                };
                command_check::run(&cmd, root).await
            }
            CheckKindSpec::Browser {
                settle_ms,
                fail_on,
                screenshot,
                require_non_blank,
                wait_for,
                keys,
                clicks,
            } => {
                let plan = SmokePlan {
                    boot: BootPlan {
                        wait_for: wait_for.clone(),
                        keys: keys.clone(),
                        clicks: clicks.clone(),
                    },
                    settle: Duration::from_millis(*settle_ms),
                    fail_on: fail_on.clone(),
                    screenshot: *screenshot,
                    require_non_blank: *require_non_blank,
                };
                self.run_browser(id, blocking, &plan).await
            }
            CheckKindSpec::AcPredicates => self.run_predicates(id, blocking, limit).await,
        }
    }

    /// Wait for one of the machine's browser slots when some check will start the browser. A
    /// pool that stays busy makes the browser checks unavailable (they could not run); a pool
    /// folder that cannot be used is not worth failing QA for, so the run goes on without one.
    async fn take_browser_slot(&self, spec: &QaSpec) -> Option<pool::SlotGuard> {
        let wants = spec.checks.iter().any(|c| match c.kind {
            CheckKindSpec::Browser { .. } => true,
            CheckKindSpec::AcPredicates => !self.request.predicates.is_empty(),
            _ => false,
        });
        if !wants || self.entry_path().is_err() {
            return None;
        }
        self.claim_warm().await;
        let warm_slot = self
            .warm
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
            .and_then(|w| w.slot.take());
        if let Some(slot) = warm_slot {
            return Some(slot);
        }
        match BrowserPool::from_env().acquire(pool::MAX_WAIT).await {
            Ok(guard) => Some(guard),
            Err(err @ PoolError::Busy { .. }) => {
                *self.browser.lock().await = BrowserSlot::Failed {
                    status: CheckStatus::Unavailable,
                    finding: Finding::new("browser_pool_busy", err.to_string()),
                };
                None
            }
            Err(err @ PoolError::Io { .. }) => {
                eprintln!("crumb: {err}; running this browser without a slot");
                None
            }
        }
    }

    /// The entry's URL path, or a finding saying why there is none.
    fn entry_path(&self) -> Result<String, Finding> {
        let Some(entry) = &self.entry else {
            return Err(Finding::new(
                "no_entry",
                "the pipeline's `qa:` block declares no `entry` to open",
            ));
        };
        let full = confine::resolve_inside(&self.root, entry)
            .map_err(|e| Finding::new(confine::Escape::CODE, e.to_string()))?;
        if !full.is_file() {
            return Err(Finding::new(
                "missing_file",
                format!("the entry `{entry}` was not written"),
            ));
        }
        Ok(entry.clone())
    }

    fn take_ac_results(&self) -> Vec<AcResult> {
        let mut got = std::mem::take(
            &mut *self
                .ac_results
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        // Predicates the run never reached (timeout) are reported, not dropped.
        for p in &self.request.predicates {
            if !got.iter().any(|r| r.ac_id == p.id) {
                got.push(AcResult {
                    ac_id: p.id.clone(),
                    status: AcStatus::Fail,
                    reason: "not run: QA timed out".into(),
                    runtime_ms: 0,
                });
            }
        }
        got
    }

    fn take_screenshot(&self) -> Option<ArtifactRef> {
        self.screenshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

fn entry_facts(spec: &QaSpec, request: &QaRequest) -> Option<EntryFacts> {
    let entry = spec.entry.as_deref()?;
    let full = confine::resolve_inside(&request.artifacts_dir, entry).ok()?;
    let bytes = std::fs::read(&full).ok()?;
    let (bundle_bytes, bundle_file_count) = full.parent().map_or((0, 0), bundle_size);
    Some(EntryFacts {
        path: entry.to_owned(),
        sha256: sha256_hex(&bytes),
        bytes: bytes.len() as u64,
        bundle_bytes,
        bundle_file_count,
    })
}

/// Total size and count of the files under `dir`, dotfiles skipped, symlinks not followed, bounded.
fn bundle_size(dir: &Path) -> (u64, u64) {
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let (mut bytes, mut files, mut seen) = (0u64, 0u64, 0usize);
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            seen += 1;
            if seen > 100_000 {
                return (bytes, files);
            }
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() && depth < 64 {
                stack.push((e.path(), depth + 1));
            } else if kind.is_file() {
                bytes = bytes.saturating_add(e.metadata().map_or(0, |m| m.len()));
                files += 1;
            }
        }
    }
    (bytes, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(checks: Vec<CheckSpec>, timeout_ms: u64) -> QaSpec {
        QaSpec {
            timeout_ms,
            entry: None,
            checks,
            retry: crate::pipeline::table::QaRetrySpec::default(),
        }
    }

    fn request(dir: &Path) -> QaRequest {
        QaRequest {
            artifacts_dir: dir.to_path_buf(),
            out_dir: dir.join("qa"),
            report_base: dir.to_path_buf(),
            label: String::new(),
            predicates: Vec::new(),
            predicate_problems: Vec::new(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_check_becomes_an_error_result() {
        let check = CheckSpec {
            id: "boom".into(),
            blocking: true,
            timeout_ms: None,
            kind: CheckKindSpec::AcPredicates,
        };
        let handle = tokio::spawn(async { panic!("deliberate") });
        let result = wait_isolated(handle, &check).await;
        assert_eq!(result.status, CheckStatus::Error);
        assert!(result.findings[0].message.contains("deliberate"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_run_deadline_bounds_a_hanging_command() {
        let dir = tempfile::tempdir().unwrap();
        let hang = CheckSpec {
            id: "hang".into(),
            blocking: true,
            timeout_ms: None,
            kind: CheckKindSpec::Command {
                argv: vec!["sleep".into(), "30".into()],
                cwd: None,
                env: vec![],
                expect_exit: 0,
            },
        };
        let after = CheckSpec {
            id: "after".into(),
            blocking: false,
            timeout_ms: None,
            kind: CheckKindSpec::Html {
                path: "x.html".into(),
            },
        };
        let report = run(&spec(vec![hang, after], 300), &request(dir.path())).await;
        assert!(report.timed_out);
        assert_eq!(report.exec_exit_code(), 2);
        assert_eq!(report.checks[0].status, CheckStatus::Timeout);
        assert_eq!(report.checks[1].status, CheckStatus::Timeout);
    }
}
