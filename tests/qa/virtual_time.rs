//! The page clock: predicates and `wait_ms` run the game's time forward instead of waiting for it,
//! and see the states real time would show (a countdown drawn each frame, a 60 s `setTimeout` and a
//! `setInterval` on `Date.now()` agree), with timeouts measured in the page's time.

use serde_json::json;

use super::{CASUAL, assert_chromium, fixture, qa_json};
use crate::support::repo_root;

#[test]
fn a_predicate_waiting_on_a_60_second_round_passes_without_waiting_a_minute() {
    assert_chromium();
    let dir = tempfile::tempdir().unwrap();
    let ac = dir.path().join("ac.json");
    std::fs::write(
        &ac,
        json!({ "ac_predicates": [
            { "id": "AC-wait", "intent": "ten seconds pass in ten seconds of the game",
              "action": "window.__t0 = window.__game.timeLeft", "wait_ms": 10000,
              "predicate": "window.__t0 - window.__game.timeLeft >= 9.9", "timeout_ms": 100 },
            { "id": "AC-early", "intent": "the round is not over 30 s later",
              "predicate": "window.__game.state === 'over'", "timeout_ms": 30000 },
            { "id": "AC-over", "intent": "the 60-second round ends",
              "predicate": "window.__game.state === 'over'", "timeout_ms": 60000 },
            { "id": "AC-timers", "intent": "every timer saw the same minute",
              "predicate": "window.__game.timedOut && window.__game.ticks >= 60 && window.__game.frames >= 3500",
              "timeout_ms": 2000 }
        ]})
        .to_string(),
    )
    .unwrap();
    let (run, result, _out) = qa_json(
        &repo_root().join(CASUAL),
        &fixture("long-round"),
        &["--ac", ac.to_str().unwrap()],
    );
    run.expect_code(1);
    let acs = result["data"]["ac_results"].as_array().unwrap();
    let status = |id: &str| {
        let ac = acs.iter().find(|a| a["ac_id"] == id).unwrap();
        (
            ac["status"].as_str().unwrap().to_owned(),
            ac["reason"].as_str().unwrap().to_owned(),
        )
    };
    for id in ["AC-wait", "AC-over", "AC-timers"] {
        assert_eq!(status(id).0, "PASS", "{id}: {:?}", status(id));
    }
    let (early, reason) = status("AC-early");
    assert_eq!(early, "FAIL", "{reason}");
    assert!(reason.contains("still falsy after 30000 ms"), "{reason}");
    // In real time this QA would last over two minutes (10 s + 30 s twice + the rest of the round).
    let runtime = result["data"]["runtime_ms"].as_u64().unwrap();
    assert!(
        runtime < 60_000,
        "QA took {runtime} ms: the page clock was not run forward"
    );
}
