//! The one boot procedure shared by the browser check and every acceptance predicate: navigate,
//! wait for the declared selector, then send the declared keys and clicks. Sharing it means a game
//! that needs a key press to start is started the same way for both (otherwise every acceptance
//! predicate of such a game would fail on a game that never started).

use std::time::{Duration, Instant};

use chromiumoxide::Page;

use super::clock;
use super::input;
use super::page_ops::{self, EvalError};
use crate::pipeline::model::Point;
use crate::qa::report::Finding;

/// Longest wait for the load event.
pub(crate) const NAV_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for the selector to appear.
pub(crate) const SELECTOR_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for one small evaluation.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// Poll period while waiting for a condition in the page: one evaluation is a loopback round trip
/// of a millisecond or two, so polling about once a frame costs little and ends the wait soon
/// after the condition holds.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// What to do after opening the page.
#[derive(Debug, Clone, Default)]
pub(crate) struct BootPlan {
    pub wait_for: String,
    pub keys: Vec<String>,
    pub clicks: Vec<Point>,
}

/// How booting went.
#[derive(Debug, Default)]
pub(crate) struct BootReport {
    pub findings: Vec<Finding>,
    pub selector_found: bool,
    pub main_thread_blocked: bool,
    /// Navigation failed or timed out while the page still answered: the browser, not the
    /// page's script, was too slow (an overloaded machine), so nothing after it is evidence.
    pub not_loaded: bool,
    pub goto_ms: u64,
}

/// Navigate `page` to `url` and run `plan`. Problems become findings; the page stays usable.
pub(crate) async fn boot(page: &Page, url: &str, plan: &BootPlan) -> BootReport {
    let mut report = BootReport::default();
    let started = Instant::now();
    // The page clock runs before the page's scripts, so settle and predicates can run it forward
    // (without it they wait in real time, as the helpers find out for themselves).
    clock::install(page).await;
    let problem = match page_ops::goto(page, url, NAV_TIMEOUT).await {
        Ok(true) => None,
        Ok(false) => Some(Finding::new(
            "navigation_timeout",
            format!(
                "the page did not finish loading within {} ms",
                NAV_TIMEOUT.as_millis()
            ),
        )),
        Err(e) => Some(Finding::new(
            "navigation_failed",
            format!("navigation failed: {e}"),
        )),
    };
    if let Some(finding) = problem {
        report.findings.push(finding);
        // Does the page still answer? A script that never yields (an infinite loop) blocks
        // every evaluation; stop it so the rest of the check (screenshot, signals) can run.
        let probe = page_ops::eval(page, "1", Duration::from_millis(750)).await;
        if matches!(probe, Err(EvalError::Timeout | EvalError::Protocol(_))) {
            report.main_thread_blocked = true;
            report.findings.push(Finding::new(
                "main_thread_blocked",
                "the page's script never yielded (an infinite loop?); it was terminated",
            ));
            page_ops::terminate_scripts(page).await;
        } else {
            report.not_loaded = true;
        }
    }
    report.goto_ms = millis(started.elapsed());
    report.selector_found = wait_for_selector(page, &plan.wait_for).await;
    if !report.selector_found {
        report.findings.push(Finding::new(
            "selector_missing",
            format!(
                "no `{}` appeared within {} ms",
                plan.wait_for,
                SELECTOR_TIMEOUT.as_millis()
            ),
        ));
        return report;
    }
    for key in &plan.keys {
        if let Err(e) = tokio::time::timeout(CALL_TIMEOUT, input::press_key(page, key))
            .await
            .unwrap_or(Err("timed out".into()))
        {
            report.findings.push(Finding::new(
                "input_failed",
                format!("pressing `{key}` failed: {e}"),
            ));
        }
    }
    for p in &plan.clicks {
        if let Err(e) = tokio::time::timeout(CALL_TIMEOUT, input::click(page, p.x, p.y))
            .await
            .unwrap_or(Err("timed out".into()))
        {
            report.findings.push(Finding::new(
                "input_failed",
                format!("clicking ({}, {}) failed: {e}", p.x, p.y),
            ));
        }
    }
    report
}

async fn wait_for_selector(page: &Page, selector: &str) -> bool {
    let Ok(quoted) = serde_json::to_string(selector) else {
        return false;
    };
    let probe = format!(
        "(() => {{ try {{ return !!document.querySelector({quoted}); }} catch (e) {{ return false; }} }})()"
    );
    let deadline = Instant::now() + SELECTOR_TIMEOUT;
    loop {
        if let Ok(v) = page_ops::eval(page, &probe, CALL_TIMEOUT).await
            && page_ops::truthy(&v)
        {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Milliseconds in a duration, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
