//! Virtual time in the page: the settle and the acceptance predicates run the game's clock forward
//! instead of waiting for it.
//!
//! [`install`] registers `clock.js` to run before any script of every document the page loads. It
//! replaces `Date`, `performance.now`, `setTimeout`/`setInterval` and `requestAnimationFrame` with
//! one clock that flows with real time (a native animation-frame pump) and that QA can also move on
//! at once: `advance(ms)` runs every timer and animation frame of `ms` milliseconds, at 60 frames
//! per clock second, in one evaluation. A game therefore goes through the same states it would in
//! real time (the same frames with the same time steps, the same timers in the same order), and a
//! predicate that waits for a 60-second round to end costs the time the page needs to compute
//! 3,600 frames, not a minute. Network, input and load events still take real time; the helpers
//! yield a real task every few frames so they get through.
//!
//! A page where the clock is missing (a script that replaced `window.__crumbClock`'s host, an
//! install that failed) falls back to real time: every helper here says so with `None`.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::AddScriptToEvaluateOnNewDocumentParams;

use super::page_ops;

/// The clock's source, run before the page's own scripts.
const SOURCE: &str = include_str!("clock.js");

/// Register the clock for every document `page` loads from now on (bounded). Without it the page
/// runs in real time only.
pub(crate) async fn install(page: &Page) {
    let params = AddScriptToEvaluateOnNewDocumentParams::new(SOURCE);
    let _ = tokio::time::timeout(Duration::from_secs(2), page.execute(params)).await;
}

/// The expression that runs the clock `ms` forward and yields `[frames before, frames after]`, or
/// `null` when the page has no clock.
pub(crate) fn advance_expression(ms: f64) -> String {
    format!(
        "((c) => c ? [c.frames(), c.advance({ms})] : null)(window.__crumbClock)",
        ms = finite(ms)
    )
}

/// The expression that waits for the promise `promise` (JavaScript source) with the clock
/// fast-forwarded up to `cap_ms`; in real time when the page has no clock.
pub(crate) fn settle_expression(promise: &str, cap_ms: u64) -> String {
    format!("((c, p) => c ? c.settle(p, {cap_ms}) : p)(window.__crumbClock, {promise})")
}

/// The expression that polls `source` (a JSON-encoded predicate) after each clock frame, until
/// the clock reaches `end` (or `ms` from now on the first call) or `real_ms` of real time passed.
/// It yields `{ ok, shown, end, pending? }`, or `{ ok, shown, real: true }` (one evaluation) when
/// the page has no clock.
pub(crate) fn poll_expression(source: &str, end: Option<f64>, ms: u64, real_ms: u64) -> String {
    let end = end.map_or_else(|| "null".to_owned(), |e| finite(e).to_string());
    format!(
        "((c) => c ? c.poll({source}, {end}, {ms}, {real_ms}) : \
         Promise.resolve((0, eval)({source})).then(v => ({{ ok: !!v, shown: String(v).slice(0, 120), real: true }})))\
         (window.__crumbClock)"
    )
}

/// `[frames before, frames after]` from an [`advance_expression`] result.
pub(crate) fn frames(value: &serde_json::Value) -> Option<(u64, u64)> {
    let list = value.as_array()?;
    Some((list.first()?.as_u64()?, list.get(1)?.as_u64()?))
}

/// Run the clock `ms` forward at once; `None` when the page has no clock or did not answer.
pub(crate) async fn advance(page: &Page, ms: u64, timeout: Duration) -> Option<(u64, u64)> {
    #[allow(clippy::cast_precision_loss, reason = "milliseconds of a wait")]
    let expression = advance_expression(ms as f64);
    page_ops::eval(page, &expression, timeout)
        .await
        .ok()
        .as_ref()
        .and_then(frames)
}

fn finite(v: f64) -> f64 {
    if v.is_finite() { v.max(0.0) } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_reads_the_pair_and_nothing_else() {
        assert_eq!(frames(&json!([3, 9])), Some((3, 9)));
        assert_eq!(frames(&json!(null)), None);
        assert_eq!(frames(&json!([1])), None);
    }

    #[test]
    fn expressions_never_carry_a_non_finite_number() {
        assert!(advance_expression(f64::NAN).contains("advance(0)"));
        assert!(poll_expression("\"1\"", Some(f64::INFINITY), 5, 5).contains(", 0, 5, 5)"));
        assert!(poll_expression("\"1\"", None, 5, 5).contains(", null, 5, 5)"));
    }
}
