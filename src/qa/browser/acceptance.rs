//! The `ac_predicates` check: `action`, then `predicate` polled until truthy or its timeout.
//! [`run_in`] evaluates an AC in the page the browser check already booted and settled;
//! [`run_one`] in a fresh browser context (no shared storage between ACs), booted like the browser
//! check. A throwing action or predicate fails the AC with the message; an AC the browser could
//! not set up (no page, a page that never loaded) is `SKIP`, not a failure.

use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};

use super::boot::{self, BootPlan, CALL_TIMEOUT, POLL};
use super::clock;
use super::launch::Chromium;
use super::page_ops::{self, EvalError};
use crate::qa::predicate::AcPredicate;
use crate::qa::report::{AcResult, AcStatus};

/// Longest real time one evaluation of a predicate may poll it on the page clock before it
/// answers (and is asked again): keeps each `DevTools` call short.
const POLL_SLICE_MS: u64 = 250;

/// How the reason of an AC the browser could not run starts (`SKIP`, never the game's failure).
pub(crate) const NOT_RUN: &str = "could not run: ";

/// Run one predicate. `budget` bounds the whole AC (setup included).
pub(crate) async fn run_one(
    chromium: &Chromium,
    url: &str,
    boot_plan: &BootPlan,
    ac: &AcPredicate,
    budget: Duration,
) -> AcResult {
    bounded(ac, budget, evaluate_ac(chromium, url, boot_plan, ac)).await
}

/// Run one predicate in `page`, already booted and settled. `budget` bounds it.
pub(crate) async fn run_in(
    page: &chromiumoxide::Page,
    ac: &AcPredicate,
    budget: Duration,
) -> AcResult {
    bounded(ac, budget, judge_booted(page, ac)).await
}

async fn bounded(
    ac: &AcPredicate,
    budget: Duration,
    work: impl Future<Output = (AcStatus, String)>,
) -> AcResult {
    let started = Instant::now();
    let outcome = tokio::time::timeout(budget, work).await;
    let (status, reason) = match outcome {
        Ok(r) => r,
        Err(_) => (
            AcStatus::Fail,
            format!(
                "did not finish within the {} ms left for QA",
                budget.as_millis()
            ),
        ),
    };
    AcResult {
        ac_id: ac.id.clone(),
        status,
        reason,
        runtime_ms: boot::millis(started.elapsed()),
    }
}

async fn evaluate_ac(
    chromium: &Chromium,
    url: &str,
    boot_plan: &BootPlan,
    ac: &AcPredicate,
) -> (AcStatus, String) {
    let context = tokio::time::timeout(
        Duration::from_secs(5),
        chromium
            .browser
            .create_browser_context(CreateBrowserContextParams::default()),
    )
    .await;
    let context: Option<BrowserContextId> = match context {
        Ok(Ok(id)) => Some(id),
        _ => None,
    };
    let mut target = CreateTargetParams::new("about:blank");
    target.browser_context_id.clone_from(&context);
    let page = match tokio::time::timeout(
        Duration::from_secs(10),
        chromium.browser.new_page(target),
    )
    .await
    {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            return (
                AcStatus::Skip,
                format!("{NOT_RUN}could not open a page: {e}"),
            );
        }
        Err(_) => return (AcStatus::Skip, format!("{NOT_RUN}opening a page timed out")),
    };
    let verdict = judge(&page, url, boot_plan, ac).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), page.close()).await;
    if let Some(id) = context {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            chromium.browser.dispose_browser_context(id),
        )
        .await;
    }
    verdict
}

async fn judge(
    page: &chromiumoxide::Page,
    url: &str,
    boot_plan: &BootPlan,
    ac: &AcPredicate,
) -> (AcStatus, String) {
    let booted = boot::boot(page, url, boot_plan).await;
    if booted.not_loaded {
        let why: Vec<String> = booted.findings.iter().map(|f| f.message.clone()).collect();
        return (AcStatus::Skip, format!("{NOT_RUN}{}", why.join("; ")));
    }
    if booted.main_thread_blocked || !booted.selector_found {
        let why: Vec<String> = booted.findings.iter().map(|f| f.message.clone()).collect();
        return (AcStatus::Fail, format!("setup: {}", why.join("; ")));
    }
    judge_booted(page, ac).await
}

async fn judge_booted(page: &chromiumoxide::Page, ac: &AcPredicate) -> (AcStatus, String) {
    let timeout_ms = ac.timeout_ms();
    if let Some(action) = &ac.action {
        let Ok(source) = serde_json::to_string(action) else {
            return (AcStatus::Fail, "action is not encodable".into());
        };
        // Indirect eval runs statements as well as expressions; a returned promise is awaited,
        // with the page clock run forward meanwhile (a `setTimeout` in the action costs no wait).
        let call = CALL_TIMEOUT.max(Duration::from_millis(timeout_ms));
        let promise = format!("Promise.resolve((0, eval)({source}))");
        let wrapped = format!(
            "{}.then(() => true)",
            clock::settle_expression(&promise, boot::millis(call))
        );
        match page_ops::eval(page, &wrapped, call).await {
            Ok(_) => {}
            Err(EvalError::Threw(m)) => return (AcStatus::Fail, format!("action threw: {m}")),
            Err(e) => return (AcStatus::Fail, format!("action failed: {e}")),
        }
    }
    if ac.wait_ms() > 0 {
        let wait = Duration::from_millis(ac.wait_ms());
        if clock::advance(page, ac.wait_ms(), CALL_TIMEOUT.max(wait))
            .await
            .is_none()
        {
            tokio::time::sleep(wait).await;
        }
    }
    let Ok(source) = serde_json::to_string(&ac.predicate) else {
        return (AcStatus::Fail, "predicate is not encodable".into());
    };
    let timeout = Duration::from_millis(timeout_ms);
    // Without the page clock, the timeout is real time (one evaluation per poll).
    let real_deadline = Instant::now() + timeout;
    let mut end: Option<f64> = None;
    let last: String;
    loop {
        let expression = clock::poll_expression(&source, end, timeout_ms, POLL_SLICE_MS);
        let call = Duration::from_millis(POLL_SLICE_MS) + CALL_TIMEOUT;
        match page_ops::eval(page, &expression, call).await {
            Ok(v) if v.get("ok").is_some_and(page_ops::truthy) => {
                return (AcStatus::Pass, "predicate held".into());
            }
            Ok(v) => {
                let shown = v
                    .get("shown")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("?")
                    .to_owned();
                let on_clock = v.get("real").is_none();
                let pending = v.get("pending").is_some_and(page_ops::truthy);
                end = v.get("end").and_then(serde_json::Value::as_f64);
                if on_clock && !pending {
                    last = shown;
                    break;
                }
                if !on_clock && Instant::now() >= real_deadline {
                    last = shown;
                    break;
                }
                if !on_clock {
                    tokio::time::sleep(POLL).await;
                }
            }
            Err(EvalError::Threw(m)) => return (AcStatus::Fail, format!("predicate threw: {m}")),
            Err(e) => {
                if Instant::now() >= real_deadline {
                    last = e.to_string();
                    break;
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }
    (
        AcStatus::Fail,
        format!(
            "predicate still falsy after {} ms (last value: {last})",
            timeout.as_millis()
        ),
    )
}
