//! Outcomes: every `done` carries one (declared by the route, `stopped` for the engine's own
//! stops), a person's `/approve` and `/veto` fire the pipeline's routes, a pass needs a passing QA
//! run, and a pass can never rest on the mock after a real adapter failed.

use serde_json::{Value, json};

use crate::engine::testkit::{
    FAIL_DIMS, PARTIAL_DIMS, PASS_DIMS, Script, ack, appended, data, done_outcome, done_reason,
    scores, spawned, spawns,
};
use crate::pipeline::table::{Action, CompiledRoute, TransitionTable, Trigger};
use crate::transcript::Kind;
use crate::vocab::{Outcome, Verdict};

/// D1–D6 that stay PARTIAL after a failed QA run zeroes D2: 23 → 18.
const PARTIAL_AFTER_FAILED_QA: [f64; 6] = [4.0, 5.0, 4.0, 4.0, 3.0, 3.0];

/// A session on `table` that awaits a person after a PARTIAL verdict (QA exited `qa_exit`).
fn awaiting_partial(table: TransitionTable, qa_exit: i64) -> Script {
    let mut s = Script::with(table);
    s.up_to_verifier(qa_exit);
    let dims = if qa_exit == 0 {
        PARTIAL_DIMS
    } else {
        PARTIAL_AFTER_FAILED_QA
    };
    s.judge(scores(dims, Verdict::Partial, None, None));
    assert!(s.state.awaiting.is_some(), "a PARTIAL awaits a person");
    s
}

/// The casual table with the PASS route ending in `outcome` / `reason`.
fn pass_route_ends(outcome: Outcome, reason: &str) -> TransitionTable {
    let mut table = crate::engine::testkit::casual();
    for route in &mut table.routes {
        if matches!(&route.trigger, Trigger::Verdict { verdicts, .. } if verdicts == &[Verdict::Pass])
        {
            route.action = Action::Done {
                outcome,
                reason: reason.to_owned(),
            };
        }
    }
    table
}

/// The casual table without the route for a person's `kind` command.
fn without_route(kind: Kind) -> TransitionTable {
    let mut table = crate::engine::testkit::casual();
    table.by_kind.remove(kind.as_str());
    table
}

#[test]
fn every_declared_outcome_is_what_done_records_whatever_the_reason() {
    for outcome in Outcome::DECLARABLE {
        let mut s = Script::with(pass_route_ends(outcome, "accepted"));
        s.up_to_verifier(0);
        let effects = s.judge(scores(PASS_DIMS, Verdict::Pass, None, None));
        assert_eq!(done_outcome(&effects), Some(outcome));
        assert_eq!(done_reason(&effects), Some("accepted"));
        let done = s.state.done.as_ref().expect("terminal");
        assert_eq!(
            (done.outcome, done.reason.as_str()),
            (Some(outcome), "accepted")
        );
    }
}

#[test]
fn the_engines_own_stops_end_stopped() {
    let mut table = crate::engine::testkit::casual();
    table.limits.max_verify = 1;
    let mut s = Script::with(table);
    s.up_to_verifier(0);
    let effects = s.judge(scores(FAIL_DIMS, Verdict::Fail, None, None));
    assert_eq!(done_reason(&effects), Some("too_many_verify"));
    assert_eq!(done_outcome(&effects), Some(Outcome::Stopped));
}

#[test]
fn a_done_line_without_an_outcome_replays_as_unknown() {
    let mut s = Script::new();
    s.goal();
    s.send("system", Kind::Done, |e| {
        e.data = Some(data(json!({"reason": "verdict_pass"})));
    });
    let done = s.state.done.as_ref().expect("terminal");
    assert_eq!((done.outcome, done.reason.as_str()), (None, "verdict_pass"));
}

#[test]
fn a_done_line_with_an_outcome_replays_it() {
    let mut s = Script::new();
    s.goal();
    s.send("system", Kind::Done, |e| {
        e.data = Some(data(json!({"reason": "accepted", "outcome": "rejected"})));
    });
    assert_eq!(
        s.state.done.as_ref().and_then(|d| d.outcome),
        Some(Outcome::Rejected)
    );
}

// ---- person commands as routes ------------------------------------------------------------------

#[test]
fn approve_fires_the_declared_route() {
    let mut s = awaiting_partial(crate::engine::testkit::casual(), 0);
    let effects = s.user(Kind::UserApprove, "", Value::Null);
    assert_eq!(ack(&effects), (true, "approved".to_owned()));
    assert_eq!(
        (done_outcome(&effects), done_reason(&effects)),
        (Some(Outcome::Pass), Some("approved"))
    );
}

#[test]
fn a_command_without_a_declared_route_is_refused_and_the_run_goes_on() {
    for kind in [Kind::UserApprove, Kind::UserVeto] {
        let mut s = awaiting_partial(without_route(kind), 0);
        let effects = s.user(kind, "no", Value::Null);
        let (ok, body) = ack(&effects);
        assert!(!ok && body.contains(kind.as_str()), "{kind}: {body}");
        assert!(spawns(&effects).is_empty() && done_outcome(&effects).is_none());
        assert!(
            s.state.awaiting.is_some(),
            "{kind}: still waiting for a person"
        );
    }
}

#[test]
fn approving_an_await_that_is_not_a_verdict_is_refused() {
    let mut table = crate::engine::testkit::casual();
    let index = table.routes.len();
    table.routes.push(CompiledRoute {
        index,
        trigger: Trigger::Kind {
            kind: "note".into(),
            from: Some("user".into()),
        },
        action: Action::AwaitHuman,
        with_feedback: false,
        max: None,
    });
    table.by_kind.insert("note".into(), vec![index]);
    let mut s = Script::with(table);
    s.goal();
    s.send("user", Kind::Note, |e| {
        e.body = Some("which colours?".into());
    });
    let awaiting = s.state.awaiting.clone().expect("awaiting");
    assert!(!awaiting.is_verdict());
    let effects = s.user(Kind::UserApprove, "", Value::Null);
    let (ok, body) = ack(&effects);
    assert!(!ok);
    assert!(body.contains("`note`"), "names what is awaited: {body}");
    assert!(done_outcome(&effects).is_none());
    assert!(s.state.done.is_none());
    assert_eq!(s.state.awaiting, Some(awaiting));
}

#[test]
fn a_veto_repair_counts_against_max_verify() {
    let mut table = crate::engine::testkit::casual();
    table.limits.max_verify = 1;
    let mut s = awaiting_partial(table, 0);
    let effects = s.user(Kind::UserVeto, "the timer never stops", Value::Null);
    assert!(ack(&effects).0);
    assert!(spawns(&effects).is_empty(), "no repair past max_verify");
    assert_eq!(
        (done_outcome(&effects), done_reason(&effects)),
        (Some(Outcome::Stopped), Some("too_many_verify"))
    );
}

// ---- a pass needs QA ------------------------------------------------------------------------------

#[test]
fn approving_with_blocking_qa_failed_ends_fail_with_one_audit() {
    let mut s = awaiting_partial(crate::engine::testkit::casual(), 1);
    let effects = s.user(Kind::UserApprove, "", Value::Null);
    assert_eq!(
        (done_outcome(&effects), done_reason(&effects)),
        (Some(Outcome::Fail), Some("pass_without_qa"))
    );
    let audits = appended(&effects, Kind::Audit);
    assert_eq!(audits.len(), 1);
    let audit = audits[0].data.as_ref().expect("data");
    assert_eq!(audit["declared_reason"], json!("approved"));
}

#[test]
fn pass_requires_qa_is_declarable() {
    let table = super::without_guard(crate::pipeline::choices::Guard::PassRequiresQa);
    let mut s = awaiting_partial(table, 1);
    let effects = s.user(Kind::UserApprove, "", Value::Null);
    assert_eq!(done_outcome(&effects), Some(Outcome::Pass));
}

// ---- degraded runs ------------------------------------------------------------------------------

/// Goal, a `session.start` binding the builder to `claude-code`, a spec, and enough failed builder
/// spawns to open its circuit.
fn builder_circuit_opens(s: &mut Script) -> Vec<crate::engine::effect::Effect> {
    s.send("system", Kind::SessionStart, |e| {
        e.data = Some(data(json!({"bindings": {
            "builder": {"adapter": "claude-code", "harness": "claude-code", "provider": "anthropic", "decided_by": "--adapter"}
        }})));
    });
    s.goal();
    s.spec();
    s.error("builder");
    s.error("builder");
    s.error("builder")
}

#[test]
fn a_pass_after_a_swap_to_the_mock_ends_fail() {
    let mut s = Script::with(super::with_builder_fallback("mock"));
    let opened = builder_circuit_opens(&mut s);
    assert_eq!(spawned(&opened), ["builder"]);
    assert!(s.state.degraded());
    let swap = &s.state.swaps[0];
    assert_eq!(
        (swap.role.as_str(), swap.from.as_deref(), swap.to.as_str()),
        ("builder", Some("claude-code"), "mock")
    );
    assert_eq!(
        appended(&opened, Kind::Audit)[0]
            .data
            .as_ref()
            .expect("data")["previous_adapter"],
        json!("claude-code")
    );
    s.build(None);
    s.qa(0);
    let effects = s.judge(scores(PASS_DIMS, Verdict::Pass, None, None));
    assert_eq!(
        (done_outcome(&effects), done_reason(&effects)),
        (Some(Outcome::Fail), Some("degraded_to_mock:builder"))
    );
    assert_eq!(appended(&effects, Kind::Audit).len(), 1);
}

#[test]
fn a_swap_to_a_real_adapter_is_degraded_but_may_pass() {
    let mut s = Script::with(super::with_builder_fallback("codex"));
    builder_circuit_opens(&mut s);
    assert!(s.state.degraded());
    assert_eq!(s.state.degraded_to_mock(), None);
    s.build(None);
    s.qa(0);
    let effects = s.judge(scores(PASS_DIMS, Verdict::Pass, None, None));
    assert_eq!(done_outcome(&effects), Some(Outcome::Pass));
}

#[test]
fn a_persons_swap_is_recorded() {
    let mut s = Script::new();
    s.goal();
    s.user(
        Kind::UserIntervene,
        "",
        json!({"swap": {"from": "builder", "to": "codex"}}),
    );
    let swap = &s.state.swaps[0];
    assert_eq!(
        (swap.role.as_str(), swap.to.as_str(), swap.cause.as_str()),
        ("builder", "codex", "person")
    );
}

#[test]
fn a_pass_after_a_persons_swap_to_the_mock_ends_fail() {
    let mut s = Script::new();
    s.goal();
    s.user(
        Kind::UserIntervene,
        "",
        json!({"swap": {"from": "builder", "to": "mock"}}),
    );
    s.spec();
    s.build(None);
    s.qa(0);
    let effects = s.judge(scores(PASS_DIMS, Verdict::Pass, None, None));
    assert_eq!(
        (done_outcome(&effects), done_reason(&effects)),
        (Some(Outcome::Fail), Some("degraded_to_mock:builder"))
    );
}
