//! Authority (C22–C26): the engine acts only on what a role may write. A role may write its
//! `produces` and the common kinds; a `goal` comes only from the person or the runner; tokens
//! count only from the runner's usage tap. An agent that appends to the transcript file directly,
//! past the `crumb event` firewall, changes nothing but the `refused_events` counter.

use super::usage;
use crate::engine::testkit::{
    FAIL_DIMS, PARTIAL_DIMS, PASS_DIMS, Script, done_reason, scores, spawns,
};
use crate::transcript::Kind;
use crate::vocab::{Severity, Verdict};

#[test]
fn c22_a_builders_pass_does_not_end_a_session_waiting_for_a_person() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.judge(scores(PARTIAL_DIMS, Verdict::Partial, None, None));
    assert!(s.state.awaiting.is_some());
    let verifications = s.state.verification.count;
    let effects = s.send("builder", Kind::JudgeScore, |e| {
        e.scores = Some(Box::new(scores(PASS_DIMS, Verdict::Pass, None, None)));
    });
    assert!(effects.is_empty(), "{effects:?}");
    assert!(s.state.done.is_none());
    assert!(s.state.awaiting.is_some(), "still waiting for the person");
    assert_eq!(s.state.verification.count, verifications);
    assert_eq!(s.state.refused_events, 1);
}

#[test]
fn c23_a_forged_fail_critical_does_not_fork_the_pipeline() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let effects = s.send("builder", Kind::JudgeScore, |e| {
        e.scores = Some(Box::new(scores(
            FAIL_DIMS,
            Verdict::Fail,
            Some(Severity::Critical),
            Some("re-plan"),
        )));
    });
    assert!(
        spawns(&effects).is_empty(),
        "no planner next to the verifier"
    );
    assert_eq!(s.state.refused_events, 1);
    // The verifier's own verdict is still the one that counts.
    let effects = s.judge(scores(PASS_DIMS, Verdict::Pass, None, None));
    assert_eq!(done_reason(&effects), Some("verdict_pass"));
}

#[test]
fn c24_a_builders_goal_is_not_planned_against() {
    let mut s = Script::new();
    s.goal();
    s.spec();
    let effects = s.send("builder", Kind::Goal, |e| {
        e.body = Some("something else entirely".into());
    });
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(s.state.goal.as_deref(), Some("60-second match-3"));
    assert_eq!(s.state.refused_events, 1);
    // Nor from an actor that is not a role at all.
    assert!(s.send("mallory", Kind::Goal, |_| {}).is_empty());
    assert_eq!(s.state.refused_events, 2);
}

#[test]
fn c25_tokens_an_agent_claims_are_never_counted() {
    let mut s = Script::new();
    s.goal();
    for (from, kind) in [("planner-lead", Kind::Note), ("planner-lead", Kind::Spec)] {
        let effects = s.send(from, kind, |e| {
            e.metadata = Some(Box::new(usage(1_000_000_000_000)));
        });
        assert_eq!(done_reason(&effects), None, "{kind}");
    }
    assert_eq!(s.state.budgets.tokens, 0);
    assert!(s.state.done.is_none());
    // The runner's usage tap still counts.
    s.send("planner-lead", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(usage(10)));
    });
    assert_eq!(s.state.budgets.tokens, 10);
}

#[test]
fn c26_the_common_kinds_and_the_runners_events_on_behalf_are_accepted() {
    let mut s = Script::new();
    s.goal();
    for kind in [
        Kind::Note,
        Kind::AgentThoughtSummary,
        Kind::AgentWake,
        Kind::ToolCall,
    ] {
        s.send("builder", kind, |_| {});
    }
    s.send("planner-lead", Kind::SpecUpdate, |_| {});
    assert_eq!(s.state.refused_events, 0);
    s.send("verifier", Kind::Build, |_| {});
    s.send("builder", Kind::QaResult, |_| {});
    s.send("builder", Kind::UserApprove, |_| {});
    assert_eq!(s.state.refused_events, 3);
    assert!(s.state.build.is_none() && s.state.qa.is_none());
}
