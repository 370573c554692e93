//! The `browser` check: open the entry, boot it, let it run, then judge what happened —
//! signals from the page, a canvas that must not stay blank, and a screenshot for the record.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, Viewport,
};
use chromiumoxide::page::ScreenshotParams;
use serde_json::{Value, json};

use super::boot::{self, BootPlan, CALL_TIMEOUT};
use super::canvas;
use super::launch::{Chromium, VIEWPORT};
use super::observe::{Signals, Watch};
use super::page_ops;
use super::settle;
use crate::pipeline::model::BrowserSignal;
use crate::qa::report::{CheckResult, CheckStatus, Finding};

/// What the browser check was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct SmokePlan {
    pub boot: BootPlan,
    pub settle: Duration,
    pub fail_on: Vec<BrowserSignal>,
    pub screenshot: bool,
    pub require_non_blank: bool,
}

/// Where the check's time went (`details.timings_ms`): opening the page, booting it (navigation,
/// selector, input), the settle it actually needed (idle ends it before the declared bound), and
/// the screenshot with the canvas judgement.
#[derive(Debug, Default, serde::Serialize)]
#[allow(clippy::struct_field_names, reason = "the wire names carry their unit")]
struct Phases {
    page_ms: u64,
    boot_ms: u64,
    settled_ms: u64,
    capture_ms: u64,
}

/// Where the screenshot goes.
#[derive(Debug, Clone)]
pub(crate) struct ShotTarget {
    pub file: PathBuf,
}

/// Facts gathered by a smoke run, besides the check result.
#[derive(Default)]
pub(crate) struct SmokeOutput {
    pub screenshot: Option<(PathBuf, Vec<u8>)>,
    /// The page, booted and settled, when boot went well: the acceptance predicates run in it
    /// next instead of each loading the game again.
    pub booted: Option<BootedPage>,
}

/// A page the browser check booted and settled, still watched (dialogs keep being accepted).
pub(crate) struct BootedPage {
    pub page: chromiumoxide::Page,
    pub watch: Watch,
}

impl BootedPage {
    /// Close the page, bounded.
    pub(crate) async fn close(self) {
        drop(self.watch);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.page.close()).await;
    }
}

/// Run the browser check against `url` (served from `origin`).
pub(crate) async fn run(
    id: &str,
    blocking: bool,
    chromium: &Chromium,
    origin: &str,
    url: &str,
    plan: &SmokePlan,
    shot: Option<&ShotTarget>,
) -> (CheckResult, SmokeOutput) {
    let mut result = CheckResult::new(id, "browser", blocking, CheckStatus::Pass);
    let mut output = SmokeOutput::default();
    let started = Instant::now();
    let mut phases = Phases::default();
    let page = match chromium.page().await {
        Ok(p) => p,
        Err(e) => {
            result.status = CheckStatus::Unavailable;
            result.findings.push(Finding::new("browser_error", e));
            return (result, output);
        }
    };
    let watch = match Watch::attach(&page, origin).await {
        Ok(w) => w,
        Err(e) => {
            result.status = CheckStatus::Unavailable;
            result.findings.push(Finding::new(
                "browser_error",
                format!("could not attach listeners: {e}"),
            ));
            return (result, output);
        }
    };
    phases.page_ms = boot::millis(started.elapsed());
    let booted = boot::boot(&page, url, &plan.boot).await;
    for f in booted.findings.iter().cloned() {
        result.fail(f);
    }
    phases.boot_ms = boot::millis(started.elapsed()).saturating_sub(phases.page_ms);
    if !booted.main_thread_blocked {
        phases.settled_ms = boot::millis(settle::settle(&page, &watch, plan.settle).await);
    }
    let capture_start = Instant::now();

    // One capture serves the record and the canvas check.
    let full = match shot {
        Some(target) if plan.screenshot => Some((target, capture_viewport(&page).await)),
        _ => None,
    };
    let full_png = full
        .as_ref()
        .and_then(|(_, captured)| captured.as_deref().ok());

    let mut canvas_facts = Value::Null;
    if plan.require_non_blank && booted.selector_found {
        let (facts, finding) = judge_canvas(&page, full_png).await;
        canvas_facts = facts;
        if let Some(f) = finding {
            result.fail(f);
        }
    }

    if let Some((target, captured)) = full {
        match captured.and_then(|bytes| {
            write_file(&target.file, &bytes)
                .map(|()| bytes)
                .map_err(|e| format!("could not save the screenshot: {e}"))
        }) {
            Ok(bytes) => output.screenshot = Some((target.file.clone(), bytes)),
            Err(why) => result.findings.push(Finding::new("screenshot_failed", why)),
        }
    }

    phases.capture_ms = boot::millis(capture_start.elapsed());
    let signals = watch.snapshot();
    let before_signals = result.findings.len();
    judge_signals(&signals, &plan.fail_on, &mut result);
    if booted.not_loaded && result.findings.len() == before_signals {
        // The page never loaded and showed no error of its own: the check could not run. (A
        // page error or console error is the game's own, so it still fails.)
        result.status = CheckStatus::Unavailable;
    }
    let reusable = booted.selector_found && !booted.main_thread_blocked && !booted.not_loaded;
    let kept = BootedPage { page, watch };
    if reusable {
        output.booted = Some(kept);
    } else {
        kept.close().await;
    }

    result.details = json!({
        "url_path": url.split_once("://").and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned())),
        "selector": plan.boot.wait_for,
        "selector_found": booted.selector_found,
        "main_thread_blocked": booted.main_thread_blocked,
        "keys": plan.boot.keys,
        "clicks": plan.boot.clicks.len(),
        "settle_ms": boot::millis(plan.settle),
        "canvas": canvas_facts,
        "signals": signals,
        "goto_ms": booted.goto_ms,
        "browser_pid": chromium.pid(),
        "browser": chromium.version,
        "elapsed_ms": boot::millis(started.elapsed()),
        "timings_ms": phases,
    });
    (result, output)
}

/// The viewport as a PNG, bounded. Sent as the bare `DevTools` command: `Page::screenshot` first
/// activates the tab (a round trip a headless tab does not need), and `optimizeForSpeed` only
/// lowers the PNG compression — the pixels, which the canvas check counts, are the same.
async fn capture_viewport(page: &chromiumoxide::Page) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let mut params = CaptureScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Png)
        .build();
    params.optimize_for_speed = Some(true);
    match tokio::time::timeout(Duration::from_secs(5), page.execute(params)).await {
        Ok(Ok(response)) => base64::engine::general_purpose::STANDARD
            .decode(AsRef::<str>::as_ref(&response.result.data))
            .map_err(|e| format!("the screenshot was not base64: {e}")),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the screenshot timed out".into()),
    }
}

fn judge_signals(signals: &Signals, fail_on: &[BrowserSignal], result: &mut CheckResult) {
    let groups: [(BrowserSignal, &str, &Vec<String>); 4] = [
        (
            BrowserSignal::ConsoleError,
            "console_error",
            &signals.console_errors,
        ),
        (BrowserSignal::PageError, "page_error", &signals.page_errors),
        (
            BrowserSignal::FailedRequest,
            "failed_request",
            &signals.failed_requests,
        ),
        (
            BrowserSignal::BlockedRequest,
            "blocked_request",
            &signals.blocked_requests,
        ),
    ];
    for (signal, code, entries) in groups {
        if !fail_on.contains(&signal) {
            continue;
        }
        for entry in entries {
            let message = if signal == BrowserSignal::BlockedRequest {
                format!("blocked a request to a non-loopback host: {entry}")
            } else {
                entry.clone()
            };
            result.fail(Finding::new(code, message));
        }
    }
}

/// Find the largest canvas and decide from its pixels whether anything was drawn: from the
/// page's screenshot `full` when there is one (the canvas's whole pixels inside it), else from a
/// capture of the canvas alone.
async fn judge_canvas(page: &chromiumoxide::Page, full: Option<&[u8]>) -> (Value, Option<Finding>) {
    const PROBE: &str = "(() => { const cs = Array.from(document.querySelectorAll('canvas')); let best = null; \
        for (const c of cs) { const r = c.getBoundingClientRect(); const area = r.width * r.height; \
        if (!best || area > best.area) best = { x: r.left, y: r.top, width: r.width, height: r.height, area, \
        pixel_width: c.width, pixel_height: c.height }; } \
        return best ? Object.assign(best, { count: cs.length }) : { count: 0 }; })()";
    let facts = match page_ops::eval(page, PROBE, CALL_TIMEOUT).await {
        Ok(v) => v,
        Err(e) => {
            return (
                Value::Null,
                Some(Finding::new(
                    "canvas_unreadable",
                    format!("could not inspect the canvas: {e}"),
                )),
            );
        }
    };
    if facts.get("count").and_then(Value::as_u64) == Some(0) {
        return (
            facts,
            Some(Finding::new("no_canvas", "the page has no <canvas>")),
        );
    }
    let num = |k: &str| facts.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let (x0, y0) = (num("x").max(0.0), num("y").max(0.0));
    let x1 = (num("x") + num("width")).min(f64::from(VIEWPORT.0));
    let y1 = (num("y") + num("height")).min(f64::from(VIEWPORT.1));
    if x1 - x0 < 1.0 || y1 - y0 < 1.0 {
        return (
            facts,
            Some(Finding::new(
                "canvas_not_visible",
                "the canvas has no visible area in the 800x600 viewport",
            )),
        );
    }
    // Whole pixels only (rounded inwards), so the page around the canvas never counts.
    let region = whole_pixels(x0, y0, x1, y1);
    if let (Some(png), Some(region)) = (full, region) {
        return judge_pixels(facts, canvas::distinct_colours_in(png, Some(region)));
    }
    let clip = Viewport {
        x: x0,
        y: y0,
        width: x1 - x0,
        height: y1 - y0,
        scale: 1.0,
    };
    let params = ScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Png)
        .clip(clip)
        .build();
    let png = match tokio::time::timeout(Duration::from_secs(5), page.screenshot(params)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => {
            return (
                facts,
                Some(Finding::new("canvas_unreadable", e.to_string())),
            );
        }
        Err(_) => {
            return (
                facts,
                Some(Finding::new(
                    "canvas_unreadable",
                    "the canvas screenshot timed out",
                )),
            );
        }
    };
    judge_pixels(facts, canvas::distinct_colours(&png))
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped to the 800x600 viewport above"
)]
fn whole_pixels(x0: f64, y0: f64, x1: f64, y1: f64) -> Option<canvas::Region> {
    let (left, top) = (x0.ceil() as usize, y0.ceil() as usize);
    let (right, bottom) = (x1.floor().max(0.0) as usize, y1.floor().max(0.0) as usize);
    (left < right && top < bottom).then_some((left, top, right, bottom))
}

/// The canvas facts and finding for a count of its distinct colours.
fn judge_pixels(facts: Value, counted: Result<usize, String>) -> (Value, Option<Finding>) {
    let mut facts = facts;
    match counted {
        Ok(colours) => {
            if let Value::Object(map) = &mut facts {
                map.insert("distinct_colours".into(), json!(colours));
            }
            if colours <= 1 {
                return (
                    facts,
                    Some(Finding::new(
                        "blank_canvas",
                        "the canvas stayed one colour: nothing was drawn",
                    )),
                );
            }
            (facts, None)
        }
        Err(e) => (
            facts,
            Some(Finding::new(
                "canvas_unreadable",
                format!("could not decode the canvas pixels: {e}"),
            )),
        ),
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, bytes)
}
