//! C1–C9: the happy path's routes, every verdict × severity cell, the guards' corrections,
//! and a person's approve and veto.

use serde_json::{Value, json};

use crate::engine::effect::{Effect, SpawnCause};
use crate::engine::guards::Correction;
use crate::engine::testkit::{
    FAIL_DIMS, PARTIAL_DIMS, PASS_DIMS, Script, ack, appended, data, done_reason, scores, spawned,
    spawns,
};
use crate::transcript::{Kind, Metadata};
use crate::vocab::{Severity, Verdict};

#[test]
fn the_suite_runs_against_the_shipped_casual_pipeline() {
    let compiled = crate::engine::testkit::casual();
    let by_hand = crate::engine::testkit::casual_by_hand();
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
    assert_eq!(spawn.id, format!("{}:0", crate::engine::testkit::id(1)));
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
    let spec = s.state.plan.as_ref().expect("spec kept");
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
    assert_eq!(qa.build_event_id, crate::engine::testkit::id(3));
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
    // No qa.result: D2 becomes 0 and the band drops from PASS (26) to PARTIAL (21), but a PASS
    // claim without a passing QA run is FAIL (scenario C6), never a PARTIAL a person could approve.
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
            "verdict_from_thresholds",
            "pass_requires_qa"
        ]
    );
    let data = audit.data.as_ref().expect("data");
    assert_eq!(data["raw"]["verdict"], json!("PASS"));
    assert_eq!(data["raw"]["aggregate"], json!(26.0));
    assert_eq!(data["corrected"]["verdict"], json!("FAIL"));
    assert_eq!(data["corrected"]["aggregate"], json!(21.0));
    assert!(appended(&effects, Kind::SessionAwaiting).is_empty());
    assert_eq!(spawned(&effects), ["builder"], "FAIL × Important repairs");
    assert!(s.state.done.is_none());
}

#[test]
fn pass_band_without_a_successful_qa_run_fails() {
    let table = super::without_guard(crate::pipeline::choices::Guard::ExecFromQa);
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
