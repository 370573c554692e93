//! C22–C26: every declaration is honoured — routes on `judge.score` (two judges in sequence),
//! fallback lists in order, and budgets checked before the spawn that would exceed them.

use serde_json::json;

use crate::engine::effect::SpawnCause;
use crate::engine::testkit::{
    FAIL_DIMS, PASS_DIMS, Script, appended, done_reason, scores, spawned, spawns,
};
use crate::pipeline::table::TransitionTable;
use crate::transcript::{Kind, Scores};
use crate::vocab::{Severity, Verdict};

/// A pipeline where `judge-a`'s score goes to `judge-b`, and only `judge-b`'s verdict routes.
const TWO_JUDGES: &str = r"
version: 1
name: two-judges
roles:
  writer: { template: w.md.j2, produces: [build], fallback: [codex, gemini-cli] }
  judge-a: { template: a.md.j2, produces: [judge.score] }
  judge-b: { template: b.md.j2, produces: [judge.score] }
routes:
  - { on: goal, spawn: writer }
  - { on: build, spawn: judge-a }
  - { on: judge.score, from: judge-a, spawn: judge-b, with: feedback }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, spawn: writer, with: feedback }
scoring: { guards: [] }
limits:
  max_verify: 5
  circuit: { open_after: 1, then: swap }
";

/// A planner/builder/judge pipeline with one re-plan allowed.
const ONE_RESPEC: &str = r"
version: 1
name: one-respec
roles:
  planner: { template: p.md.j2, produces: [spec] }
  builder: { template: b.md.j2, produces: [build] }
  judge: { template: j.md.j2, produces: [judge.score] }
routes:
  - { on: goal, spawn: planner }
  - { on: spec, spawn: builder }
  - { on: build, spawn: judge }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, when: { severity: Critical }, spawn: planner, with: feedback }
  - { on: verdict, spawn: builder, with: feedback }
limits:
  max_respec: 1
  max_verify: 9
  tokens: { warn: 100, hard: 1000 }
";

pub(super) fn table(yaml: &str) -> TransitionTable {
    let compiled = crate::pipeline::compile::compile_str(
        yaml,
        std::path::Path::new("pipelines/test.yaml"),
        &crate::pipeline::compile::CompileOptions {
            check_templates: false,
        },
        &crate::pipeline::source::InMemory::new().shared(),
    );
    compiled
        .table
        .unwrap_or_else(|| panic!("compiles: {:#?}", compiled.diagnostics))
}

fn judge_as(s: &mut Script, from: &str, scores: Scores) -> Vec<crate::engine::Effect> {
    s.send(from, Kind::JudgeScore, |e| {
        e.scores = Some(Box::new(scores));
    })
}

/// The session stopped with `reason` and nothing was spawned.
fn assert_stopped_without_a_spawn(effects: &[crate::engine::Effect], reason: &str) {
    assert_eq!(done_reason(effects), Some(reason));
    assert!(spawns(effects).is_empty(), "{effects:#?}");
}

fn fail(severity: Severity, text: &str) -> Scores {
    scores(FAIL_DIMS, Verdict::Fail, Some(severity), Some(text))
}

#[test]
fn c22_a_judge_score_route_sends_judge_a_to_judge_b_and_judge_b_decides() {
    let mut s = Script::with(table(TWO_JUDGES));
    assert_eq!(spawned(&s.goal()), ["writer"]);
    assert_eq!(spawned(&s.send("writer", Kind::Build, |_| {})), ["judge-a"]);
    // judge-a fails the work, yet its route hands over to judge-b, with its feedback.
    let handed = judge_as(&mut s, "judge-a", fail(Severity::Important, "typos"));
    assert_eq!(spawned(&handed), ["judge-b"]);
    assert_eq!(
        spawns(&handed)[0]
            .feedback
            .as_ref()
            .map(|f| f.text.as_str()),
        Some("typos")
    );
    // The score was still assessed and counted.
    assert_eq!(s.state.verification.count, 1);
    // judge-b's verdict takes the verdict routes: FAIL repairs, PASS ends.
    let repair = judge_as(&mut s, "judge-b", fail(Severity::Minor, "tone"));
    assert_eq!(spawned(&repair), ["writer"]);
    s.send("writer", Kind::Build, |_| {});
    assert_eq!(
        spawned(&judge_as(
            &mut s,
            "judge-a",
            scores(PASS_DIMS, Verdict::Pass, None, None)
        )),
        ["judge-b"]
    );
    let passed = judge_as(
        &mut s,
        "judge-b",
        scores(PASS_DIMS, Verdict::Pass, None, None),
    );
    assert_eq!(done_reason(&passed), Some("verdict_pass"));
    assert_eq!(s.state.verification.count, 4);
}

#[test]
fn c23_fallbacks_are_tried_in_declared_order_then_the_circuit_stops() {
    let mut s = Script::with(table(TWO_JUDGES));
    s.goal();
    let first = s.error("writer");
    let swap = spawns(&first)[0];
    assert_eq!(
        (swap.cause, swap.adapter.as_deref()),
        (SpawnCause::CircuitSwap, Some("codex"))
    );
    let second = s.error("writer");
    assert_eq!(spawns(&second)[0].adapter.as_deref(), Some("gemini-cli"));
    let audit = appended(&second, Kind::Audit)[0];
    let data = audit.data.as_ref().expect("data");
    assert_eq!(
        (&data["previous_adapter"], &data["new_adapter"]),
        (&json!("codex"), &json!("gemini-cli"))
    );
    assert_stopped_without_a_spawn(&s.error("writer"), "circuit_open:writer");
}

#[test]
fn c24_max_respec_stops_before_spawning_the_planner_past_the_budget() {
    let mut s = Script::with(table(ONE_RESPEC));
    s.goal();
    s.send("planner", Kind::Spec, |_| {});
    s.send("builder", Kind::Build, |_| {});
    // The first re-plan is within the budget.
    let replan = judge_as(&mut s, "judge", fail(Severity::Critical, "wrong game"));
    assert_eq!(spawned(&replan), ["planner"]);
    s.send("planner", Kind::Spec, |_| {});
    assert_eq!(s.state.budgets.respecs, 1);
    s.send("builder", Kind::Build, |_| {});
    // A second re-plan would exceed it: stop now, without spawning the planner.
    let stopped = judge_as(&mut s, "judge", fail(Severity::Critical, "still wrong"));
    assert_stopped_without_a_spawn(&stopped, "too_many_respec");
}

#[test]
fn c25_a_judging_role_is_not_spawned_past_max_verify() {
    let mut t = table(TWO_JUDGES);
    t.limits.max_verify = 3;
    let mut s = Script::with(t);
    s.goal();
    s.send("writer", Kind::Build, |_| {});
    judge_as(&mut s, "judge-a", fail(Severity::Minor, "a"));
    judge_as(&mut s, "judge-b", fail(Severity::Minor, "b"));
    s.send("writer", Kind::Build, |_| {});
    // The third score is the last one allowed: even on a PASS, judge-b would write a fourth.
    let stopped = judge_as(
        &mut s,
        "judge-a",
        scores(PASS_DIMS, Verdict::Pass, None, None),
    );
    assert_stopped_without_a_spawn(&stopped, "too_many_verify");
}

/// Pins the token cap (already enforced by the limits stage) on the same path.
#[test]
fn c26_no_spawn_at_the_token_hard_cap() {
    let mut s = Script::with(table(ONE_RESPEC));
    s.goal();
    // Usage counts only from the runner's record of a turn (`agent.stop`), never an agent's event.
    let stopped = s.send("planner", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(super::usage(1000)));
    });
    assert_stopped_without_a_spawn(&stopped, "token_exhausted");
    assert!(
        spawned(&s.spec()).is_empty(),
        "nothing starts after the hard cap"
    );
}

#[test]
fn c27_a_judge_whose_scores_a_kind_route_takes_needs_no_verdict_routes() {
    let mut s = Script::with(table(
        r"
version: 1
name: recorded-review
roles:
  writer: { template: w.md.j2, produces: [build] }
  judge: { template: j.md.j2, produces: [judge.score] }
scoring: { guards: [] }
routes:
  - { on: goal, spawn: writer }
  - { on: build, spawn: judge }
  - { on: judge.score, done: { outcome: pass, reason: reviewed } }
",
    ));
    s.goal();
    s.send("writer", Kind::Build, |_| {});
    let done = judge_as(&mut s, "judge", fail(Severity::Minor, "meh"));
    assert_eq!(done_reason(&done), Some("reviewed"));
    assert_eq!(s.state.verification.count, 1);
}

/// Without `qa:` and without `guards:`, the default guards leave out the two that need a QA run:
/// a passing score passes (before, `pass_requires_qa` turned every PASS of such a pipeline into
/// FAIL, and `exec_from_qa` zeroed D2).
#[test]
fn a_pipeline_without_qa_or_guards_passes_on_a_passing_score() {
    let table = table(ONE_RESPEC);
    assert!(table.qa.is_none());
    assert!(
        table.scoring.guards.iter().all(|g| !g.needs_qa()),
        "{:?}",
        table.scoring.guards
    );
    let mut s = Script::with(table);
    s.goal();
    s.send("planner", Kind::Spec, |_| {});
    s.send("builder", Kind::Build, |_| {});
    let effects = judge_as(
        &mut s,
        "judge",
        scores(PASS_DIMS, Verdict::Pass, None, None),
    );
    assert_eq!(done_reason(&effects), Some("verdict_pass"), "{effects:#?}");
    assert!(
        appended(&effects, Kind::Audit).is_empty(),
        "nothing to correct"
    );
}
