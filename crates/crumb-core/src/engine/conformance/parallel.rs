//! C28–C34: parallel roles. A `spawn:` list starts every branch at once (one effect each), a
//! `join:` route collects the branches' corrected verdicts and fires when its mode (all, any,
//! quorum n) is met, and the declared rule (`all_pass`, `majority`, `mean`, `min`) combines them into the
//! one verdict the verdict routes see.

use crate::engine::Effect;
use crate::engine::testkit::{
    FAIL_DIMS, PARTIAL_DIMS, PASS_DIMS, Script, appended, done_reason, scores, spawned, spawns,
};
use crate::transcript::{Kind, Scores};
use crate::vocab::{Severity, Verdict};

use super::declared::table;

/// Three judges in parallel; `join` and `combine` filled in per test.
fn panel(join: &str, combine: &str) -> Script {
    Script::with(table(&format!(
        r"
version: 1
name: panel
roles:
  writer: {{ template: w.md.j2, produces: [build] }}
  judge-a: {{ template: a.md.j2, produces: [judge.score] }}
  judge-b: {{ template: b.md.j2, produces: [judge.score] }}
  judge-c: {{ template: c.md.j2, produces: [judge.score] }}
routes:
  - {{ on: goal, spawn: writer }}
  - {{ on: build, spawn: [judge-a, judge-b, judge-c] }}
  - {{ on: judge.score, join: {join}, combine: {combine} }}
  - {{ on: verdict, when: {{ verdict: PASS }}, done: pass }}
  - {{ on: verdict, when: {{ verdict: PARTIAL }}, await: human }}
  - {{ on: verdict, spawn: writer, with: feedback }}
  - {{ on: user.approve, done: pass }}
scoring: {{ pass_at: 24, partial_at: 18, guards: [] }}
limits: {{ max_verify: 30 }}
"
    )))
}

fn pass() -> Scores {
    scores(PASS_DIMS, Verdict::Pass, None, Some("fine"))
}
fn partial() -> Scores {
    scores(PARTIAL_DIMS, Verdict::Partial, None, Some("so-so"))
}
fn fail(severity: Severity, text: &str) -> Scores {
    scores(FAIL_DIMS, Verdict::Fail, Some(severity), Some(text))
}

fn judge(s: &mut Script, from: &str, scores: Scores) -> Vec<Effect> {
    s.send(from, Kind::JudgeScore, |e| {
        e.scores = Some(Box::new(scores));
    })
}

/// The `data` of the one `hook` event named `name` among `effects`.
fn hook(effects: &[Effect], name: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    appended(effects, Kind::Hook)
        .into_iter()
        .filter_map(|d| d.data.clone())
        .find(|d| d.get("hook").and_then(|h| h.as_str()) == Some(name))
}

/// Up to the fan-out: goal, a build, and the three judges spawned.
fn fanned(join: &str, combine: &str) -> Script {
    let mut s = panel(join, combine);
    s.goal();
    let effects = s.send("writer", Kind::Build, |_| {});
    assert_eq!(spawned(&effects), ["judge-a", "judge-b", "judge-c"]);
    s
}

#[test]
fn c28_a_spawn_list_starts_every_branch_as_its_own_effect() {
    let mut s = panel("all", "all_pass");
    s.goal();
    let effects = s.send("writer", Kind::Build, |_| {});
    let ids: Vec<&str> = spawns(&effects).iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), 3);
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique, ids, "one effect id per branch: {ids:?}");
    assert!(hook(&effects, "fan_out").is_some());
    let fan_out = s.state.fan_out.as_ref().expect("recorded");
    assert_eq!(fan_out.roles, ["judge-a", "judge-b", "judge-c"]);
    assert!(fan_out.joined.is_none());
}

#[test]
fn c29_join_all_waits_for_every_branch_and_all_pass_needs_every_pass() {
    let mut s = fanned("all", "all_pass");
    let first = judge(&mut s, "judge-a", pass());
    assert!(spawned(&first).is_empty() && done_reason(&first).is_none());
    assert!(hook(&first, "join_waiting").is_some());
    judge(
        &mut s,
        "judge-b",
        fail(Severity::Minor, "typo in the title"),
    );
    let joined = judge(&mut s, "judge-c", pass());
    // One FAIL among passes: FAIL × Minor, and the writer gets only the failing branch's words.
    assert_eq!(spawned(&joined), ["writer"]);
    let feedback = spawns(&joined)[0].feedback.as_ref().expect("feedback");
    assert_eq!(feedback.text, "judge-b: typo in the title");
    assert_eq!(
        (feedback.verdict, feedback.severity),
        (Verdict::Fail, Severity::Minor)
    );
    let data = hook(&joined, "join").expect("join hook");
    assert_eq!(data["verdict"], "FAIL");
    assert_eq!(data["branches"].as_array().map(Vec::len), Some(3));
    // A second round: all pass → done.
    s.send("writer", Kind::Build, |_| {});
    for role in ["judge-a", "judge-b"] {
        judge(&mut s, role, pass());
    }
    assert_eq!(
        done_reason(&judge(&mut s, "judge-c", pass())),
        Some("verdict_pass")
    );
    assert_eq!(
        s.state.verification.count, 6,
        "every branch's score is assessed"
    );
}

#[test]
fn c30_join_any_fires_on_the_first_branch_and_records_the_late_ones() {
    let mut s = fanned("any", "all_pass");
    let first = judge(&mut s, "judge-b", fail(Severity::Critical, "wrong topic"));
    assert_eq!(spawned(&first), ["writer"]);
    let late = judge(&mut s, "judge-a", pass());
    assert!(spawned(&late).is_empty() && done_reason(&late).is_none());
    assert!(hook(&late, "join_ignored").is_some(), "{late:#?}");
}

#[test]
fn c31_quorum_with_majority() {
    let mut s = fanned("{ quorum: 2 }", "majority");
    judge(&mut s, "judge-a", pass());
    let joined = judge(&mut s, "judge-c", pass());
    assert_eq!(done_reason(&joined), Some("verdict_pass"));
    // 1 pass of 2 is no majority: FAIL.
    let mut s = fanned("{ quorum: 2 }", "majority");
    judge(&mut s, "judge-a", pass());
    let split = judge(&mut s, "judge-b", fail(Severity::Important, "no"));
    assert_eq!(spawned(&split), ["writer"]);
    // Two of three pass: a majority, whatever the third said.
    let mut s = fanned("all", "majority");
    judge(&mut s, "judge-a", pass());
    judge(&mut s, "judge-b", fail(Severity::Important, "no"));
    assert_eq!(
        done_reason(&judge(&mut s, "judge-c", pass())),
        Some("verdict_pass")
    );
}

#[test]
fn c32_mean_bands_the_mean_aggregate() {
    // 27, 12 and 20 average 19.6667: PARTIAL, which waits for a person.
    let mut s = fanned("all", "mean");
    judge(&mut s, "judge-a", pass());
    judge(&mut s, "judge-b", fail(Severity::Important, "no"));
    let joined = judge(&mut s, "judge-c", partial());
    assert_eq!(hook(&joined, "join").expect("join")["verdict"], "PARTIAL");
    assert_eq!(appended(&joined, Kind::SessionAwaiting).len(), 1);
}

#[test]
fn c33_min_bands_the_lowest_aggregate() {
    // 27, 27 and 20: the lowest, 20, is PARTIAL although two judges passed.
    let mut s = fanned("all", "min");
    judge(&mut s, "judge-a", pass());
    judge(&mut s, "judge-b", pass());
    let joined = judge(&mut s, "judge-c", partial());
    let data = hook(&joined, "join").expect("join");
    assert_eq!(
        (data["verdict"].as_str(), data["aggregate"].as_f64()),
        (Some("PARTIAL"), Some(20.0))
    );
}

#[test]
fn c34_a_branch_budget_is_checked_before_any_branch_starts() {
    let mut s = panel("all", "all_pass");
    s.table.limits.max_verify = 0;
    s.goal();
    let effects = s.send("writer", Kind::Build, |_| {});
    assert!(spawns(&effects).is_empty());
    assert_eq!(done_reason(&effects), Some("too_many_verify"));
}

#[test]
fn c44_a_late_branch_of_a_joined_round_leaves_the_persons_question_waiting() {
    // `join: any`: the first verdict joins the round; its PARTIAL waits for a person. A judge
    // that reports afterwards is recorded, not routed, and must not answer that question.
    let mut s = fanned("any", "all_pass");
    judge(&mut s, "judge-a", partial());
    let waiting = s.state.awaiting.clone();
    assert!(waiting.is_some(), "the joined PARTIAL waits for a person");
    let effects = judge(&mut s, "judge-b", pass());
    assert!(
        hook(&effects, "join_ignored").is_some(),
        "the late verdict is not routed"
    );
    assert_eq!(s.state.awaiting, waiting, "still waiting for the person");
    let effects = s.user(Kind::UserApprove, "", serde_json::Value::Null);
    assert_eq!(done_reason(&effects), Some("verdict_pass"), "{effects:#?}");
}

fn reject() -> Scores {
    scores(FAIL_DIMS, Verdict::Reject, None, Some("off topic"))
}

#[test]
fn c45_what_a_join_reports_its_severity_aggregate_and_reject() {
    // A `majority` FAIL carries the most severe of its non-passing branches (Critical here, so
    // the Critical route takes it); its aggregate is the mean of the corrected aggregates.
    let mut s = fanned("all", "majority");
    judge(&mut s, "judge-a", fail(Severity::Minor, "thin"));
    judge(&mut s, "judge-b", pass());
    let joined = judge(&mut s, "judge-c", fail(Severity::Critical, "wrong"));
    let data = hook(&joined, "join").expect("join");
    assert_eq!(
        (
            data["verdict"].as_str(),
            data["severity"].as_str(),
            data["aggregate"].as_f64()
        ),
        (Some("FAIL"), Some("Critical"), Some(17.0)),
        "{data:?}"
    );
    // All passed: the severity is `Important`.
    let mut s = fanned("all", "all_pass");
    judge(&mut s, "judge-a", pass());
    judge(&mut s, "judge-b", pass());
    let data = hook(&judge(&mut s, "judge-c", pass()), "join").expect("join");
    assert_eq!(data["severity"], "Important", "{data:?}");
    // REJECT never comes from the bands: two REJECT claims in the FAIL band make a `majority`
    // REJECT, while `mean` of the same three branches is banded, so FAIL.
    for (combine, verdict) in [("majority", "REJECT"), ("mean", "FAIL"), ("min", "FAIL")] {
        let mut s = fanned("all", combine);
        judge(&mut s, "judge-a", reject());
        judge(&mut s, "judge-b", pass());
        let data = hook(&judge(&mut s, "judge-c", reject()), "join").expect("join");
        assert_eq!(data["verdict"], verdict, "{combine}: {data:?}");
    }
}
