//! The browser check's settle: let the booted page run until it is idle, with the declared
//! `settle` as the upper bound.
//!
//! A game loop requests animation frames forever, so "idle" cannot mean "nothing scheduled".
//! It means: the load event fired (boot returned), no request is in flight, the page has drawn
//! at least [`MIN_FRAMES`] animation frames since the settle began, and nothing QA watches
//! (a request, a console error, an uncaught exception) happened for [`QUIET`]. A page that never
//! gets there settles for the whole declared time, as before.
//!
//! With the page clock ([`super::clock`]) all of it is measured in the page's time, run forward a
//! chunk at a time: the same frames and timers happen, without waiting for them. Real time still
//! bounds the whole settle by `upper`, and a request in flight is waited for in real time.

use std::time::{Duration, Instant};

use chromiumoxide::Page;

use super::clock;
use super::observe::Watch;
use super::page_ops;

/// How long nothing watched must happen before the page counts as idle. An error a script
/// schedules a few frames after load (a `setTimeout` of tens of milliseconds) falls inside it.
pub(crate) const QUIET: Duration = Duration::from_millis(200);
/// Animation frames the page must have drawn: a game has run its loop, not only loaded.
pub(crate) const MIN_FRAMES: u32 = 10;
/// How often the idle conditions are checked.
const TICK: Duration = Duration::from_millis(10);
/// Page time run forward between two checks of the idle conditions (three frames).
const CHUNK_MS: u64 = 50;

/// Resolves once the page has drawn `MIN_FRAMES` animation frames.
fn frames_probe() -> String {
    format!(
        "new Promise((done) => {{ let n = 0; const f = () => {{ n += 1; \
         if (n >= {MIN_FRAMES}) done(n); else requestAnimationFrame(f); }}; requestAnimationFrame(f); }})"
    )
}

/// Wait until the page is idle or `upper` has passed; returns how long it waited (real time).
pub(crate) async fn settle(page: &Page, watch: &Watch, upper: Duration) -> Duration {
    let started = Instant::now();
    if settle_on_clock(page, watch, upper, started).await {
        return started.elapsed();
    }
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

/// [`settle`] in page time. Returns `false` (nothing done) when the page has no clock.
async fn settle_on_clock(page: &Page, watch: &Watch, upper: Duration, started: Instant) -> bool {
    let upper_ms = crate::qa::browser::boot::millis(upper);
    let quiet_ms = crate::qa::browser::boot::millis(QUIET);
    let (mut page_ms, mut last_event_ms) = (0_u64, 0_u64);
    let mut first_frame: Option<u64> = None;
    let mut checked = Instant::now();
    while page_ms < upper_ms {
        let left = upper.saturating_sub(started.elapsed());
        if left.is_zero() {
            break;
        }
        let (no_requests, _) = watch.activity();
        if no_requests {
            let chunk = CHUNK_MS.min(upper_ms - page_ms);
            let Some((before, after)) = clock::advance(page, chunk, left).await else {
                // No clock (or no answer) before anything ran: settle in real time instead.
                return first_frame.is_some();
            };
            first_frame.get_or_insert(before);
            page_ms += chunk;
            let drawn = after.saturating_sub(first_frame.unwrap_or(after));
            let (no_requests, quiet_for) = watch.activity();
            if quiet_for < checked.elapsed() {
                // Something watched happened while the page ran: quiet starts again.
                last_event_ms = page_ms;
            }
            checked = Instant::now();
            if drawn >= u64::from(MIN_FRAMES)
                && no_requests
                && page_ms >= quiet_ms
                && page_ms - last_event_ms >= quiet_ms
            {
                break;
            }
        } else {
            // A request is a real-time thing: let it finish (the page's clock flows meanwhile).
            tokio::time::sleep(TICK.min(left)).await;
            last_event_ms = page_ms;
            checked = Instant::now();
        }
    }
    true
}
