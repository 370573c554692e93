//! C35–C36: declared kinds. The plan and build slots follow `kinds:`, not kind names: a
//! pipeline whose researcher writes `step.research` as its plan gets the re-plan budget on it,
//! and QA runs on whatever it declares as the build.

use crate::engine::testkit::{Script, done_reason, spawned};
use crate::transcript::Kind;

use super::declared::table;

const OUTLINED: &str = r"
version: 1
name: outlined
kinds:
  step.research: { slot: plan }
  step.design: { slot: build }
roles:
  researcher: { template: r.md.j2, produces: [step.research] }
  drafter: { template: d.md.j2, produces: [step.design] }
  judge: { template: j.md.j2, produces: [judge.score] }
routes:
  - { on: goal, spawn: researcher }
  - { on: step.research, spawn: drafter }
  - { on: step.design, spawn: judge }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, when: { severity: Critical }, spawn: researcher, with: feedback }
  - { on: verdict, spawn: drafter, with: feedback }
scoring: { guards: [] }
limits: { max_respec: 1, max_verify: 9 }
";

#[test]
fn c35_a_declared_plan_kind_carries_the_re_plan_budget() {
    let mut s = Script::with(table(OUTLINED));
    s.goal();
    assert_eq!(
        spawned(&s.send("researcher", Kind::StepResearch, |_| {})),
        ["drafter"]
    );
    assert!(s.state.plan.is_some(), "the plan slot is filled");
    assert_eq!(
        spawned(&s.send("drafter", Kind::StepDesign, |_| {})),
        ["judge"]
    );
    assert_eq!(
        s.state.budgets.builds, 1,
        "the declared build kind counts as a build"
    );
    s.send("researcher", Kind::StepResearch, |_| {});
    assert_eq!(s.state.budgets.respecs, 1);
    // A second re-plan is past max_respec: the route stops instead of spawning.
    let stopped = s.send("researcher", Kind::StepResearch, |_| {});
    assert_eq!(done_reason(&stopped), Some("too_many_respec"));
}

#[test]
fn c36_an_undeclared_kind_fills_no_slot() {
    let mut s = Script::with(table(OUTLINED));
    s.goal();
    // `spec` is only the plan when a pipeline says so (here it is not even produced).
    s.send("user", Kind::Note, |_| {});
    assert!(s.state.plan.is_none() && s.state.build.is_none());
    assert!(s.table.slot("spec").is_none() && s.table.slot("build").is_none());
}

const RESEARCH: &str = r"
version: 1
name: research
kinds:
  research.note: {}
  draft: {}
roles:
  researcher: { template: r.md.j2, produces: [research.note] }
  writer: { template: w.md.j2, produces: [draft] }
  judge: { template: j.md.j2, produces: [judge.score] }
routes:
  - { on: goal, spawn: researcher }
  - { on: research.note, spawn: writer }
  - { on: draft, spawn: judge }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, spawn: writer, with: feedback }
scoring: { rubric: [{ id: accuracy, label: Accuracy }], pass_at: 4, partial_at: 2, guards: [] }
limits: { max_verify: 3 }
";

fn kind(name: &str) -> Kind {
    name.parse().expect("a declarable name")
}

#[test]
fn c37_a_pipeline_routes_on_kinds_of_its_own_and_has_no_slots() {
    let mut s = Script::with(table(RESEARCH));
    s.goal();
    assert_eq!(
        spawned(&s.send("researcher", kind("research.note"), |_| {})),
        ["writer"]
    );
    assert_eq!(spawned(&s.send("writer", kind("draft"), |_| {})), ["judge"]);
    assert!(s.state.plan.is_none() && s.state.build.is_none(), "no slot");
    assert_eq!(s.table.declared_kinds, ["research.note", "draft"]);
}

#[test]
fn c38_replay_skips_a_kind_the_pipeline_does_not_declare() {
    let table = table(RESEARCH);
    let mut replay = crate::engine::Replay::new();
    let line = |n: u32, kind: &str| {
        format!(
            r#"{{"id":"01KQMWN9DSF17TZJEXA3JF7R{n:02}","ts":"2026-05-02T17:40:00.000Z","session_id":"s","from":"researcher","kind":"{kind}","body":"b"}}"#
        )
    };
    assert!(replay.fold_line(&table, 1, line(1, "research.note").as_bytes()));
    assert!(!replay.fold_line(&table, 2, line(2, "research.memo").as_bytes()));
    // The strict parser's way (a line the fast path leaves to it) skips it the same.
    let parsed = crate::engine::replay::parse_line(line(3, "research.memo").as_bytes());
    assert!(
        !replay
            .fold_parsed(&table, 3, parsed)
            .is_ok_and(|folded| folded.is_some())
    );
    assert_eq!(replay.stats.skipped, 2);
    assert!(
        replay.stats.skipped_lines[0]
            .reason
            .contains("unknown event kind `research.memo`"),
        "{:?}",
        replay.stats.skipped_lines
    );
}
