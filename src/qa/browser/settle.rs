//! The browser check's settle: let the booted page run until it is idle, with the declared
//! `settle` as the upper bound.
//!
//! A game loop requests animation frames forever, so "idle" cannot mean "nothing scheduled".
//! It means: the load event fired (boot returned), no request is in flight, the page has drawn
//! at least [`MIN_FRAMES`] animation frames since the settle began, and nothing QA watches
//! (a request, a console error, an uncaught exception) happened for [`QUIET`]. A page that never
//! gets there settles for the whole declared time, as before.

use std::time::{Duration, Instant};

use chromiumoxide::Page;

use super::observe::Watch;
use super::page_ops;

/// How long nothing watched must happen before the page counts as idle. An error a script
/// schedules a few frames after load (a `setTimeout` of tens of milliseconds) falls inside it.
pub(crate) const QUIET: Duration = Duration::from_millis(200);
/// Animation frames the page must have drawn: a game has run its loop, not only loaded.
pub(crate) const MIN_FRAMES: u32 = 10;
/// How often the idle conditions are checked.
const TICK: Duration = Duration::from_millis(10);

/// Resolves once the page has drawn `MIN_FRAMES` animation frames.
fn frames_probe() -> String {
    format!(
        "new Promise((done) => {{ let n = 0; const f = () => {{ n += 1; \
         if (n >= {MIN_FRAMES}) done(n); else requestAnimationFrame(f); }}; requestAnimationFrame(f); }})"
    )
}

/// Wait until the page is idle or `upper` has passed; returns how long it waited.
pub(crate) async fn settle(page: &Page, watch: &Watch, upper: Duration) -> Duration {
    let started = Instant::now();
    let deadline = started + upper;
    let probe = frames_probe();
    let frames = page_ops::eval(page, &probe, upper);
    tokio::pin!(frames);
    // `None` while the probe runs; `Some(false)` if it failed (then only the bound ends the wait).
    let mut drew: Option<bool> = None;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let tick = TICK.min(deadline - now);
        if drew.is_none() {
            tokio::select! {
                outcome = &mut frames => drew = Some(outcome.is_ok()),
                () = tokio::time::sleep(tick) => {}
            }
        } else {
            tokio::time::sleep(tick).await;
        }
        let (no_requests, quiet_for) = watch.activity();
        if drew == Some(true) && no_requests && quiet_for >= QUIET && started.elapsed() >= QUIET {
            break;
        }
    }
    started.elapsed()
}
