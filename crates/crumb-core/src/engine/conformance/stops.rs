//! Stop reasons (too many verifies or re-plans, tokens, wall clock), the circuit breaker and
//! the stuck report.

use serde_json::json;

use super::usage;
use crate::engine::effect::SpawnCause;
use crate::engine::testkit::{
    FAIL_DIMS, PASS_DIMS, Script, appended, data, done_reason, scores, spawned, spawns,
};
use crate::pipeline::choices::CircuitAction;
use crate::transcript::Kind;
use crate::vocab::{Severity, Verdict};

// ---- stop reasons -------------------------------------------------------------------------------

#[test]
fn stop_too_many_verify_after_the_fifth_failing_verdict() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    for round in 1..=5 {
        let effects = s.judge(scores(FAIL_DIMS, Verdict::Fail, None, None));
        if round < 5 {
            assert_eq!(spawned(&effects), ["builder"], "round {round}");
            s.build(None);
            s.qa(0);
        } else {
            assert!(spawns(&effects).is_empty());
            assert_eq!(done_reason(&effects), Some("too_many_verify"));
        }
    }
    assert_eq!(s.state.verification.count, 5);
}

#[test]
fn stop_too_many_respec_on_the_fourth_respec() {
    let mut s = Script::new();
    s.goal();
    s.spec();
    for respec in 1..=4 {
        let effects = s.send("planner-lead", Kind::SpecUpdate, |e| {
            e.data = Some(data(json!({"acceptance_criteria": [format!("v{respec}")]})));
        });
        if respec <= 3 {
            assert_eq!(spawned(&effects), ["builder"], "respec {respec}");
        } else {
            assert_eq!(done_reason(&effects), Some("too_many_respec"));
            assert!(spawns(&effects).is_empty());
        }
    }
    assert_eq!(s.state.budgets.respecs, 4);
    assert_eq!(
        s.state.plan.as_ref().map(|s| s.acceptance_criteria.clone()),
        Some(vec!["v4".to_owned()])
    );
}

#[test]
fn stop_token_exhausted_after_one_warning() {
    let mut s = Script::new();
    s.goal();
    let quiet = s.send("planner-lead", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(usage(249_999)));
    });
    assert!(quiet.is_empty());
    let warned = s.send("planner-lead", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(usage(1)));
    });
    let hooks = appended(&warned, Kind::Hook);
    assert_eq!(hooks.len(), 1);
    assert_eq!(
        hooks[0].body.as_deref(),
        Some("session token total 250000 crossed 250000 (hard cap 300000)")
    );
    assert!(
        s.send("planner-lead", Kind::AgentStop, |e| e.metadata =
            Some(Box::new(usage(10))))
            .is_empty(),
        "warned once"
    );
    let stopped = s.send("planner-lead", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(usage(50_000)));
    });
    assert_eq!(done_reason(&stopped), Some("token_exhausted"));
    assert!(
        s.send("planner-lead", Kind::AgentStop, |e| e.metadata =
            Some(Box::new(usage(10))))
            .is_empty()
    );
}

#[test]
fn stop_wall_clock_exhausted_from_event_timestamps() {
    let mut s = Script::new();
    s.goal();
    // The session starts at the goal's timestamp (1 s).
    let warned = s.send("planner-lead", Kind::Note, |e| {
        e.ts = crate::engine::testkit::ts_ms(50 * 60_000 + 1000);
    });
    assert_eq!(appended(&warned, Kind::Hook).len(), 1);
    let again = s.send("planner-lead", Kind::Note, |e| {
        e.ts = crate::engine::testkit::ts_ms(55 * 60_000);
    });
    assert!(again.is_empty());
    // A spec arriving after the hard cap starts no builder.
    let effects = s.send("planner-lead", Kind::Spec, |e| {
        e.ts = crate::engine::testkit::ts_ms(60 * 60_000 + 1000);
    });
    assert_eq!(done_reason(&effects), Some("wall_clock_exhausted"));
    assert!(spawns(&effects).is_empty());
}

#[test]
fn stop_verdict_pass_and_stop_approved_are_covered_above() {
    // verdict_pass: c5_clean_pass…; approved: c9_partial…; this test pins the reason words.
    let mut s = Script::new();
    s.up_to_verifier(0);
    assert_eq!(
        done_reason(&s.judge(scores(PASS_DIMS, Verdict::Pass, None, None))),
        Some("verdict_pass")
    );
}

// ---- C8/C13: circuit breaker and stuck ----------------------------------------------------------

#[test]
fn failed_spawns_retry_then_swap_once_then_stop_circuit_open() {
    let mut s = Script::with(super::with_builder_fallback("mock"));
    s.goal();
    s.spec();
    assert_eq!(
        spawns(&s.error("builder"))
            .iter()
            .map(|sp| sp.cause)
            .collect::<Vec<_>>(),
        [SpawnCause::Retry]
    );
    // Runner-written wake/stop/notes from the role never reset the breaker.
    s.send("builder", Kind::AgentWake, |_| {});
    s.send("builder", Kind::AgentStop, |_| {});
    s.send("builder", Kind::Note, |_| {});
    assert_eq!(spawned(&s.error("builder")), ["builder"]);
    let opened = s.error("builder");
    let swap = spawns(&opened)[0];
    assert_eq!(
        (swap.cause, swap.adapter.as_deref()),
        (SpawnCause::CircuitSwap, Some("mock"))
    );
    let audit = appended(&opened, Kind::Audit)[0];
    assert_eq!(
        audit.data.as_ref().expect("data")["new_adapter"],
        json!("mock")
    );
    s.error("builder");
    s.error("builder");
    let stopped = s.error("builder");
    assert_eq!(done_reason(&stopped), Some("circuit_open:builder"));
    assert!(spawns(&stopped).is_empty());
}

#[test]
fn a_successful_turn_resets_the_breaker() {
    let mut s = Script::new();
    s.goal();
    s.spec();
    s.error("builder");
    s.error("builder");
    s.build(None);
    assert_eq!(s.state.roles["builder"].failures_in_a_row, 0);
    assert_eq!(s.state.roles["builder"].turns, 1);
}

#[test]
fn circuit_then_stop_stops_at_the_first_opening() {
    let mut table = crate::engine::testkit::casual();
    table.limits.circuit_then = CircuitAction::Stop;
    let mut s = Script::with(table);
    s.goal();
    s.error("planner-lead");
    s.error("planner-lead");
    assert_eq!(
        done_reason(&s.error("planner-lead")),
        Some("circuit_open:planner-lead")
    );
}

#[test]
fn a_retry_keeps_the_failed_spawns_feedback() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.judge(scores(
        FAIL_DIMS,
        Verdict::Fail,
        Some(Severity::Minor),
        Some("colours"),
    ));
    let retry = s.error("builder");
    assert_eq!(
        spawns(&retry)[0].feedback.as_ref().map(|f| f.text.as_str()),
        Some("colours")
    );
}

#[test]
fn stuck_is_reported_once_per_crossing() {
    let mut s = Script::new();
    s.goal();
    let mut hooks = 0;
    for _ in 0..7 {
        let effects = s.send("system", Kind::Error, |e| {
            e.body = Some("qa runner crashed".into());
        });
        hooks += appended(&effects, Kind::Hook).len();
    }
    assert_eq!(hooks, 1);
    s.spec();
    assert_eq!(s.state.budgets.errors_in_a_row, 0);
    let mut again = 0;
    for _ in 0..5 {
        again += appended(&s.send("system", Kind::Error, |_| {}), Kind::Hook).len();
    }
    assert_eq!(again, 1, "a new crossing after progress is reported again");
}
