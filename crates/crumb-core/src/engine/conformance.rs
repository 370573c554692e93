//! Conformance suite: the reference's scenarios (`reference/core.md` §9) with our fixed semantics,
//! one test per verdict × severity cell and per stop reason, against the casual pipeline's table.

#![allow(
    clippy::float_cmp,
    reason = "scores are rounded to 4 decimals; exact values are the point"
)]

use serde_json::{Value, json};

use super::effect::{Effect, SpawnCause};
use super::guards::Correction;
use super::testkit::{
    FAIL_DIMS, PARTIAL_DIMS, PASS_DIMS, Script, ack, appended, data, done_reason, scores, spawned,
    spawns, without_acks,
};
use crate::pipeline::table::CircuitAction;
use crate::transcript::{Kind, Metadata};
use crate::vocab::{Severity, Verdict};

#[test]
fn the_suite_runs_against_the_shipped_casual_pipeline() {
    let compiled = super::testkit::casual();
    let by_hand = super::testkit::casual_by_hand();
    assert_eq!(
        compiled
            .routes
            .iter()
            .map(|r| (&r.trigger, &r.action, r.with_feedback))
            .collect::<Vec<_>>(),
        by_hand
            .routes
            .iter()
            .map(|r| (&r.trigger, &r.action, r.with_feedback))
            .collect::<Vec<_>>()
    );
    assert_eq!(compiled.verdict_matrix, by_hand.verdict_matrix);
    assert_eq!(compiled.limits, by_hand.limits);
    assert_eq!(compiled.scoring, by_hand.scoring);
    let fallbacks = |t: &crate::pipeline::table::TransitionTable| {
        t.roles
            .iter()
            .map(|r| (r.id.clone(), r.produces.clone(), r.fallback.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(fallbacks(&compiled), fallbacks(&by_hand));
}

// ---- C1–C4: the happy path's routes -----------------------------------------------------------

#[test]
fn c1_goal_spawns_the_goal_route_target() {
    let mut s = Script::new();
    let effects = s.goal();
    assert_eq!(spawned(&effects), ["planner-lead"]);
    let spawn = spawns(&effects)[0];
    assert_eq!(spawn.id, format!("{}:0", super::testkit::id(1)));
    assert_eq!(
        (spawn.attempt, spawn.cause, spawn.adapter.as_deref()),
        (0, SpawnCause::Route, None)
    );
    assert_eq!(s.state.goal.as_deref(), Some("60-second match-3"));
    assert_eq!(s.state.next_role.as_deref(), Some("planner-lead"));
}

#[test]
fn c2_spec_spawns_the_builder_and_is_snapshotted() {
    let mut s = Script::new();
    s.goal();
    assert_eq!(spawned(&s.spec()), ["builder"]);
    let spec = s.state.spec.as_ref().expect("spec kept");
    assert_eq!(spec.acceptance_criteria, ["a", "b"]);
    assert_eq!(s.state.budgets.respecs, 0, "the first spec is not a respec");
    assert_eq!(s.state.roles["planner-lead"].turns, 1);
}

#[test]
fn c3_build_runs_qa_with_the_entry_and_the_spec_predicates() {
    let mut s = Script::new();
    s.goal();
    s.spec();
    let effects = s.build(Some("anthropic"));
    let [Effect::RunQa(qa)] = effects.as_slice() else {
        panic!("one RunQa expected: {effects:#?}")
    };
    assert_eq!(qa.build_event_id, super::testkit::id(3));
    assert_eq!(qa.entry.as_deref(), Some("game/index.html"));
    assert_eq!(
        qa.ac_predicates,
        vec![json!({"id": "ac1", "predicate_js": "true"})]
    );
    assert_eq!(
        s.state.build.as_ref().and_then(|b| b.provider.as_deref()),
        Some("anthropic")
    );
}

#[test]
fn c4_qa_result_spawns_the_verifier_and_a_missing_exit_code_counts_as_failed() {
    let mut s = Script::new();
    let effects = s.send("system", Kind::QaResult, |e| {
        e.data = Some(data(json!({"lint_passed": true})));
    });
    assert_eq!(spawned(&effects), ["verifier"]);
    let qa = s.state.qa.as_ref().expect("snapshot");
    assert_eq!(qa.exec_exit_code, None);
    assert!(!qa.passed());
}

// ---- C5–C7 and every verdict × severity cell ---------------------------------------------------

#[test]
fn c5_clean_pass_ends_the_session_without_an_audit() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let effects = s.judge(scores(PASS_DIMS, Verdict::Pass, None, None));
    assert_eq!(effects.len(), 1, "{effects:#?}");
    assert_eq!(done_reason(&effects), Some("verdict_pass"));
    assert_eq!(
        s.state.done.as_ref().map(|d| d.reason.as_str()),
        Some("verdict_pass")
    );
}

#[test]
fn c6_pass_without_qa_is_corrected_in_one_audit_and_routed_as_corrected() {
    let mut s = Script::new();
    s.goal();
    s.spec();
    s.build(None);
    // No qa.result: D2 becomes 0 and the band drops from PASS (26) to PARTIAL (21).
    let effects = s.judge(scores(
        [4.0, 5.0, 4.0, 5.0, 4.0, 4.0],
        Verdict::Pass,
        None,
        None,
    ));
    let audits = appended(&effects, Kind::Audit);
    assert_eq!(audits.len(), 1);
    let audit = audits[0];
    assert_eq!(audit.from, "validator");
    let meta = audit.metadata.as_ref().expect("metadata");
    assert_eq!(
        meta.audit_violations,
        [
            "exec_from_qa",
            "aggregate_recomputed",
            "verdict_from_thresholds"
        ]
    );
    let data = audit.data.as_ref().expect("data");
    assert_eq!(data["raw"]["verdict"], json!("PASS"));
    assert_eq!(data["raw"]["aggregate"], json!(26.0));
    assert_eq!(data["corrected"]["verdict"], json!("PARTIAL"));
    assert_eq!(data["corrected"]["aggregate"], json!(21.0));
    assert_eq!(appended(&effects, Kind::SessionAwaiting).len(), 1);
    assert!(s.state.done.is_none());
}

#[test]
fn pass_band_without_a_successful_qa_run_fails() {
    let mut table = super::testkit::casual();
    table
        .scoring
        .guards
        .retain(|g| *g != crate::pipeline::table::Guard::ExecFromQa);
    let mut s = Script::with(table);
    s.up_to_verifier(1);
    let effects = s.judge(scores([5.0; 6], Verdict::Pass, None, Some("looks great")));
    let latest = s.state.verification.latest.as_ref().expect("record");
    assert_eq!(latest.corrected.verdict, Verdict::Fail);
    assert_eq!(latest.corrections, [Correction::PassRequiresQa]);
    assert_eq!(spawned(&effects), ["builder"]);
}

/// Every cell of the verdict × severity matrix routes to the table's target.
#[test]
fn every_verdict_severity_cell_routes_by_the_table() {
    let cells: [(Verdict, [f64; 6], Severity, &str); 12] = [
        (
            Verdict::Pass,
            PASS_DIMS,
            Severity::Critical,
            "done:verdict_pass",
        ),
        (
            Verdict::Pass,
            PASS_DIMS,
            Severity::Important,
            "done:verdict_pass",
        ),
        (
            Verdict::Pass,
            PASS_DIMS,
            Severity::Minor,
            "done:verdict_pass",
        ),
        (Verdict::Partial, PARTIAL_DIMS, Severity::Critical, "await"),
        (Verdict::Partial, PARTIAL_DIMS, Severity::Important, "await"),
        (Verdict::Partial, PARTIAL_DIMS, Severity::Minor, "await"),
        (
            Verdict::Fail,
            FAIL_DIMS,
            Severity::Critical,
            "spawn:planner-lead",
        ),
        (
            Verdict::Fail,
            FAIL_DIMS,
            Severity::Important,
            "spawn:builder",
        ),
        (Verdict::Fail, FAIL_DIMS, Severity::Minor, "spawn:builder"),
        (
            Verdict::Reject,
            FAIL_DIMS,
            Severity::Critical,
            "spawn:planner-lead",
        ),
        (
            Verdict::Reject,
            FAIL_DIMS,
            Severity::Important,
            "spawn:builder",
        ),
        (Verdict::Reject, FAIL_DIMS, Severity::Minor, "spawn:builder"),
    ];
    for (verdict, dims, severity, expected) in cells {
        let mut s = Script::new();
        s.up_to_verifier(0);
        let effects = s.judge(scores(dims, verdict, Some(severity), Some("fix the timer")));
        assert!(
            appended(&effects, Kind::Audit).is_empty(),
            "{verdict} × {severity}: honest claims need no audit"
        );
        let got = match (done_reason(&effects), spawns(&effects).first()) {
            (Some(reason), _) => format!("done:{reason}"),
            (None, Some(spawn)) => {
                let feedback = spawn
                    .feedback
                    .as_ref()
                    .expect("repair spawns carry the feedback");
                assert_eq!((feedback.verdict, feedback.severity), (verdict, severity));
                assert_eq!(feedback.text, "fix the timer");
                format!("spawn:{}", spawn.role)
            }
            (None, None) if !appended(&effects, Kind::SessionAwaiting).is_empty() => {
                assert!(s.state.awaiting.is_some());
                "await".to_owned()
            }
            _ => format!("{effects:?}"),
        };
        assert_eq!(got, expected, "{verdict} × {severity}");
    }
}

#[test]
fn c7_critical_replans_and_the_feedback_reaches_only_the_next_spawn() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let mut judged = scores(
        FAIL_DIMS,
        Verdict::Fail,
        Some(Severity::Critical),
        Some("AC#3 contradicts AC#1"),
    );
    judged.suggested_change = Some("drop AC#3".into());
    let effects = s.judge(judged);
    let spawn = spawns(&effects)[0];
    assert_eq!(spawn.role, "planner-lead");
    let feedback = spawn.feedback.as_ref().expect("feedback");
    assert_eq!(feedback.suggested_change.as_deref(), Some("drop AC#3"));
    // The planner's next spec spawns the builder without that feedback: it does not pile up.
    let effects = s.spec();
    assert!(spawns(&effects)[0].feedback.is_none());
    assert_eq!(s.state.budgets.respecs, 1);
}

#[test]
fn a_missing_severity_counts_as_important() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let effects = s.judge(scores(FAIL_DIMS, Verdict::Fail, None, None));
    assert_eq!(spawned(&effects), ["builder"]);
    let record = s.state.verification.latest.as_ref().expect("record");
    assert!(record.severity_defaulted);
    assert_eq!(
        spawns(&effects)[0]
            .feedback
            .as_ref()
            .map(|f| f.text.as_str()),
        Some("verification failed")
    );
}

#[test]
fn only_judge_score_routes_and_verify_result_is_never_counted() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.judge(scores(FAIL_DIMS, Verdict::Fail, None, None));
    let alias = s.send("verifier", Kind::VerifyResult, |e| {
        e.scores = Some(Box::new(scores(FAIL_DIMS, Verdict::Fail, None, None)));
    });
    assert!(alias.is_empty(), "{alias:#?}");
    assert_eq!(s.state.verification.count, 1);
    assert_eq!(s.state.verify_aliases, 1);
    assert!(s.state.verification.previous.is_none());
}

#[test]
fn judge_score_without_scores_fails_with_a_tagged_audit() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let effects = s.send("verifier", Kind::JudgeScore, |_| {});
    let audit = appended(&effects, Kind::Audit)[0];
    assert!(
        audit
            .metadata
            .as_ref()
            .expect("meta")
            .audit_violations
            .contains(&"scores_missing".to_owned())
    );
    assert_eq!(spawned(&effects), ["builder"]);
}

#[test]
fn same_provider_discount_needs_two_real_providers() {
    for (builder, judge, discounted) in [
        (Some("anthropic"), Some("anthropic"), true),
        (Some("none"), Some("none"), false),
        (None, None, false),
        (Some("mock"), Some("mock"), false),
    ] {
        let mut s = Script::new();
        s.goal();
        s.spec();
        s.build(builder);
        s.qa(0);
        let effects = s.send("verifier", Kind::JudgeScore, |e| {
            e.scores = Some(Box::new(scores(PASS_DIMS, Verdict::Pass, None, None)));
            e.metadata = judge.map(|p| {
                Box::new(Metadata {
                    provider: Some(p.into()),
                    ..Metadata::default()
                })
            });
        });
        let record = s.state.verification.latest.as_ref().expect("record");
        assert_eq!(
            record
                .corrections
                .contains(&Correction::SameProviderDiscount),
            discounted,
            "{builder:?}"
        );
        assert_eq!(
            appended(&effects, Kind::Audit).len(),
            usize::from(discounted)
        );
    }
}

#[test]
fn an_ac_predicate_failure_caps_spec_fit() {
    let mut s = Script::new();
    s.goal();
    s.spec();
    s.build(None);
    s.send("system", Kind::QaResult, |e| {
        e.data = Some(data(json!({"exec_exit_code": 0, "ac_results": [{"ac_id": "ac1", "status": "FAIL"}, {"ac_id": "ac2", "status": "PASS"}]})));
    });
    s.judge(scores([5.0; 6], Verdict::Pass, None, None));
    let record = s.state.verification.latest.as_ref().expect("record");
    assert_eq!(record.corrected.dimensions[0], 2.0);
    assert!(
        record
            .corrections
            .contains(&Correction::AcFailureCapsSpecFit)
    );
}

#[test]
fn rework_caps_convergence_from_the_transcript_not_the_claim() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    // First round is honest; the repair round claims a churn-free D4 after one rebuild and a veto.
    s.judge(scores(PARTIAL_DIMS, Verdict::Partial, None, None));
    s.user(Kind::UserVeto, "make it harder", Value::Null);
    s.build(None);
    s.qa(0);
    let effects = s.judge(scores([5.0; 6], Verdict::Pass, None, None));
    let record = s.state.verification.latest.as_ref().expect("record");
    assert_eq!(record.raw.dimensions[3], Some(5.0));
    assert_eq!(
        record.corrected.dimensions[3], 4.0,
        "one rebuild caps D4 at 4"
    );
    assert_eq!(record.corrected.aggregate, 29.0);
    assert_eq!(record.corrected.verdict, Verdict::Pass);
    let audit = appended(&effects, Kind::Audit)[0];
    assert!(
        audit
            .metadata
            .as_ref()
            .expect("metadata")
            .audit_violations
            .iter()
            .any(|v| v == "rework_caps_convergence")
    );
    assert_eq!(
        (s.state.budgets.builds, s.state.budgets.vetoes),
        (2, 1),
        "counted from the transcript"
    );
}

// ---- C9: PARTIAL, approve, veto -----------------------------------------------------------------

#[test]
fn c9_partial_awaits_a_person_and_approve_ends_as_approved() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let effects = s.judge(scores(PARTIAL_DIMS, Verdict::Partial, None, None));
    let awaiting = appended(&effects, Kind::SessionAwaiting);
    assert_eq!(awaiting.len(), 1);
    assert_eq!(awaiting[0].from, "system");
    assert!(spawns(&effects).is_empty());
    let effects = s.user(Kind::UserApprove, "", Value::Null);
    assert_eq!(ack(&effects), (true, "approved".to_owned()));
    assert_eq!(done_reason(&effects), Some("approved"));
    assert_eq!(
        s.state.done.as_ref().map(|d| d.reason.as_str()),
        Some("approved")
    );
}

#[test]
fn approve_without_anything_awaiting_is_an_error_ack() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let effects = s.user(Kind::UserApprove, "", Value::Null);
    assert!(!ack(&effects).0);
    assert!(done_reason(&effects).is_none());
    assert!(s.state.done.is_none());
}

#[test]
fn veto_takes_the_repair_route_with_the_reason_as_feedback() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.judge(scores(PARTIAL_DIMS, Verdict::Partial, None, None));
    let effects = s.user(Kind::UserVeto, "the timer never stops", Value::Null);
    assert_eq!(ack(&effects), (true, "vetoed".to_owned()));
    let spawn = spawns(&effects)[0];
    assert_eq!(
        (spawn.role.as_str(), spawn.cause),
        ("builder", SpawnCause::Veto)
    );
    assert_eq!(
        spawn.feedback.as_ref().map(|f| f.text.as_str()),
        Some("the timer never stops")
    );
    assert!(s.state.awaiting.is_none());
}

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
        s.state.spec.as_ref().map(|s| s.acceptance_criteria.clone()),
        Some(vec!["v4".to_owned()])
    );
}

fn usage(tokens: u64) -> Metadata {
    Metadata {
        tokens_in: Some(tokens),
        tokens_out: Some(0),
        ..Metadata::default()
    }
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
        e.ts = super::testkit::ts_ms(50 * 60_000 + 1000);
    });
    assert_eq!(appended(&warned, Kind::Hook).len(), 1);
    let again = s.send("planner-lead", Kind::Note, |e| {
        e.ts = super::testkit::ts_ms(55 * 60_000);
    });
    assert!(again.is_empty());
    // A spec arriving after the hard cap starts no builder.
    let effects = s.send("planner-lead", Kind::Spec, |e| {
        e.ts = super::testkit::ts_ms(60 * 60_000 + 1000);
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
    let mut s = Script::new();
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
    let mut table = super::testkit::casual();
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

// ---- C14: pause and resume ----------------------------------------------------------------------

#[test]
fn c14_global_pause_queues_and_resume_refires_exactly_the_queued_spawn() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.judge(scores(FAIL_DIMS, Verdict::Fail, None, Some("too slow")));
    s.build(None);
    let effects = s.user(Kind::UserPause, "lunch", Value::Null);
    assert_eq!(ack(&effects), (true, "paused globally".to_owned()));
    let effects = s.qa(0);
    assert!(spawns(&effects).is_empty());
    assert_eq!(appended(&effects, Kind::Hook).len(), 1);
    assert!(s.state.roles["verifier"].queued.is_some());
    let effects = s.user(Kind::UserResume, "", Value::Null);
    assert_eq!(spawned(&effects), ["verifier"]);
    assert_eq!(
        ack(&effects),
        (true, "resumed globally; re-fired verifier".to_owned())
    );
    // A second resume re-fires nothing.
    assert!(spawns(&s.user(Kind::UserResume, "", Value::Null)).is_empty());
}

#[test]
fn queued_spawns_keep_their_feedback() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.user(Kind::UserPause, "", json!({"actor": "builder"}));
    let effects = s.judge(scores(
        FAIL_DIMS,
        Verdict::Fail,
        None,
        Some("jump is broken"),
    ));
    assert!(spawns(&effects).is_empty());
    let effects = s.send("user", Kind::UserResume, |e| e.to = Some("builder".into()));
    let spawn = spawns(&effects)[0];
    assert_eq!(spawn.role, "builder");
    assert_eq!(
        spawn.feedback.as_ref().map(|f| f.text.as_str()),
        Some("jump is broken")
    );
    assert_eq!(
        ack(&effects),
        (true, "resumed @builder; re-fired builder".to_owned())
    );
}

#[test]
fn a_role_pause_holds_only_that_role() {
    let mut s = Script::new();
    let effects = s.send("user", Kind::UserPause, |e| e.to = Some("builder".into()));
    assert_eq!(ack(&effects), (true, "paused @builder".to_owned()));
    assert_eq!(spawned(&s.goal()), ["planner-lead"]);
    assert!(spawns(&s.spec()).is_empty());
}

#[test]
fn commands_naming_unknown_roles_get_error_acks_and_change_nothing() {
    let mut s = Script::new();
    s.goal();
    let before = s.state.clone();
    for (kind, value) in [
        (Kind::UserPause, json!({"actor": "researcher"})),
        (Kind::UserResume, json!({"actor": "researcher"})),
        (Kind::UserIntervene, json!({"goto": "researcher"})),
        (
            Kind::UserIntervene,
            json!({"swap": {"from": "researcher", "to": "mock"}, "reset_circuit": "builder"}),
        ),
        (Kind::UserIntervene, json!({"cancel": "nobody"})),
        (Kind::UserIntervene, json!({"reset_circuit": "nobody"})),
        (Kind::UserIntervene, json!({"ask": "weather"})),
    ] {
        let effects = s.user(kind, "x", value.clone());
        let (ok, body) = ack(&effects);
        assert!(!ok, "{value}: {body}");
        assert!(body.starts_with("error: "), "{body}");
        assert_eq!(without_acks(&effects).len(), 0, "{value}");
    }
    assert_eq!(s.state.roles, before.roles);
    assert_eq!(s.state.paused, before.paused);
}

// ---- C15–C17: interventions, acks, ask ----------------------------------------------------------

#[test]
fn c15_goto_spawns_with_the_body_and_consumes_the_event() {
    let mut s = Script::new();
    s.goal();
    let effects = s.user(
        Kind::UserIntervene,
        "redo from spec",
        json!({"goto": "planner-lead"}),
    );
    assert_eq!(ack(&effects).1, "goto planner-lead");
    let spawn = spawns(&effects)[0];
    assert_eq!(spawn.cause, SpawnCause::Goto);
    assert_eq!(spawn.interventions[0].text, "redo from spec");
    assert_eq!(spawn.consumed_intervene_ids, [super::testkit::id(2)]);
}

#[test]
fn c15_swap_cancel_and_reset_circuit() {
    let mut s = Script::new();
    s.goal();
    let effects = s.user(
        Kind::UserIntervene,
        "",
        json!({"swap": {"from": "builder", "to": "mock"}}),
    );
    assert_eq!(ack(&effects).1, "swapped builder → mock");
    assert_eq!(spawns(&s.spec())[0].adapter.as_deref(), Some("mock"));
    let effects = s.user(
        Kind::UserIntervene,
        "taking too long",
        json!({"cancel": "builder"}),
    );
    let Some(Effect::Cancel(cancel)) = effects.iter().find(|e| matches!(e, Effect::Cancel(_)))
    else {
        panic!("cancel")
    };
    assert_eq!(cancel.role.as_deref(), Some("builder"));
    assert!(cancel.reason.contains("taking too long"));
    let effects = s.user(Kind::UserIntervene, "", json!({"cancel": "all"}));
    assert_eq!(ack(&effects).1, "cancelled all spawns");
    s.error("builder");
    s.error("builder");
    let effects = s.user(Kind::UserIntervene, "", json!({"reset_circuit": "builder"}));
    assert_eq!(ack(&effects).1, "reset circuit for builder");
    assert_eq!(s.state.roles["builder"].failures_in_a_row, 0);
}

#[test]
fn c16_targeted_appends_reach_one_role_and_broadcasts_reach_every_role_once() {
    let mut s = Script::new();
    s.goal();
    let effects = s.send("user", Kind::UserIntervene, |e| {
        e.to = Some("builder".into());
        e.data = Some(data(json!({"append": "use only red and green"})));
    });
    assert_eq!(ack(&effects).1, "appended to next @builder spawn");
    s.user(
        Kind::UserIntervene,
        "",
        json!({"append": "keep it under 100 KB"}),
    );
    let builder = s.spec();
    let texts: Vec<&str> = spawns(&builder)[0]
        .interventions
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(texts, ["use only red and green", "keep it under 100 KB"]);
    assert_eq!(spawns(&builder)[0].consumed_intervene_ids.len(), 2);
    s.build(None);
    let verifier = s.qa(0);
    let texts: Vec<&str> = spawns(&verifier)[0]
        .interventions
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(
        texts,
        ["keep it under 100 KB"],
        "the targeted append is not the verifier's"
    );
    // Consumed: the next builder spawn gets nothing.
    let again = s.judge(scores(FAIL_DIMS, Verdict::Fail, None, None));
    assert!(spawns(&again)[0].interventions.is_empty());
}

#[test]
fn c17_every_user_kind_is_acked_with_ack_for() {
    let mut s = Script::new();
    s.goal();
    for (kind, value, expected) in [
        (
            Kind::UserPause,
            json!({"actor": "planner-lead"}),
            "paused @planner-lead",
        ),
        (
            Kind::UserResume,
            json!({"actor": "planner-lead"}),
            "resumed @planner-lead",
        ),
        (
            Kind::UserIntervene,
            json!({"goto": "verifier"}),
            "goto verifier",
        ),
        (Kind::UserIntervene, Value::Null, "intervene queued"),
        (
            Kind::UserVeto,
            json!({"target_msg_id": "01H00000000000000000000099"}),
            "vetoed 01H00000000000000000000099",
        ),
    ] {
        let effects = s.user(kind, "do thing", value);
        let acks = appended(&effects, Kind::Ack);
        assert_eq!(acks.len(), 1);
        assert_eq!(acks[0].from, "system");
        assert_eq!(
            acks[0].metadata.as_ref().and_then(|m| m.ack_for.clone()),
            Some(super::testkit::id(s.n))
        );
        assert_eq!(acks[0].body.as_deref(), Some(expected));
    }
}

#[test]
fn ask_answers_describe_the_state_before_the_question() {
    let mut s = Script::new();
    s.send("system", Kind::SessionStart, |_| {});
    s.goal();
    let effects = s.send("user", Kind::UserIntervene, |e| {
        e.data = Some(data(json!({"ask": "status"})));
        e.ts = super::testkit::ts_ms(125_000);
    });
    let notes = appended(&effects, Kind::Note);
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].body.as_deref(),
        Some("session 2m4s | last=user/goal | next=planner-lead")
    );
    assert_eq!(
        notes[0]
            .metadata
            .as_ref()
            .and_then(|m| m.in_reply_to.clone()),
        Some(super::testkit::id(3))
    );
    assert_eq!(ack(&effects).1, "answered");
}

// ---- done, re-reduction, determinism ------------------------------------------------------------

#[test]
fn a_done_event_sets_the_terminal_state_and_later_commands_change_nothing() {
    let mut s = Script::new();
    s.goal();
    s.send("coordinator", Kind::Done, |e| {
        e.body = Some("wall_clock_exhausted".into());
    });
    assert_eq!(
        s.state.done.as_ref().map(|d| d.reason.as_str()),
        Some("wall_clock_exhausted")
    );
    assert!(s.spec().is_empty());
    let effects = s.user(Kind::UserIntervene, "", json!({"goto": "builder"}));
    assert!(!ack(&effects).0);
    assert_eq!(without_acks(&effects).len(), 0);
    let asked = s.user(Kind::UserIntervene, "", json!({"ask": "status"}));
    assert_eq!(appended(&asked, Kind::Note).len(), 1, "/ask still answers");
}

/// Events the engine asks to append come back through the transcript; reducing them must not
/// count anything twice or trigger anything.
#[test]
fn re_reducing_appended_events_is_harmless() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let mut pending = s.judge(scores(
        [4.0, 5.0, 4.0, 5.0, 4.0, 4.0],
        Verdict::Pass,
        None,
        None,
    ));
    pending.extend(s.user(Kind::UserIntervene, "", json!({"ask": "scorecard"})));
    pending.extend(s.send("planner-lead", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(usage(260_000)));
    }));
    let before = s.state.clone();
    for effect in pending {
        let Effect::Append(append) = effect else {
            continue;
        };
        let mut event = s.next(&append.draft.from, append.draft.kind);
        event.data = append.draft.data.clone();
        event.body = append.draft.body.clone();
        event.metadata = append.draft.metadata.clone().map(Box::new);
        event.parent_event_id = append.draft.parent_event_id.clone();
        let effects = s.feed(&event);
        assert!(
            effects.is_empty(),
            "{:?} caused {effects:#?}",
            append.draft.kind
        );
    }
    assert_eq!(s.state.verification, before.verification);
    assert_eq!(s.state.budgets, before.budgets);
    assert_eq!(s.state.awaiting, before.awaiting);
    assert_eq!(s.state.roles, before.roles);
}

#[test]
fn c21_replaying_the_same_events_twice_gives_byte_identical_state() {
    let run = || {
        let mut s = Script::new();
        s.up_to_verifier(0);
        s.judge(scores(
            FAIL_DIMS,
            Verdict::Fail,
            Some(Severity::Important),
            Some("x"),
        ));
        s.user(Kind::UserPause, "", Value::Null);
        s.build(Some("openai"));
        s.user(Kind::UserResume, "", Value::Null);
        s.qa(0);
        s.judge(scores(PARTIAL_DIMS, Verdict::Partial, None, None));
        s.user(Kind::UserApprove, "", Value::Null);
        serde_json::to_string(&s.state).expect("state serialises")
    };
    assert_eq!(run(), run());
}

#[test]
fn effect_ids_are_the_event_id_and_an_index() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let mut inflated = scores(PASS_DIMS, Verdict::Pass, None, None);
    inflated.aggregate = Some(30.0);
    let effects = s.judge(inflated);
    let ids: Vec<&str> = effects.iter().map(Effect::id).collect();
    let event = super::testkit::id(s.n);
    assert_eq!(ids, [format!("{event}:0"), format!("{event}:1")]);
    let Effect::Append(audit) = &effects[0] else {
        panic!("audit first")
    };
    assert_eq!(
        audit
            .draft
            .metadata
            .as_ref()
            .and_then(|m| m.effect_id.as_deref()),
        Some(ids[0])
    );
}
