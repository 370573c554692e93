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
    assert!(s.state.spec.is_some(), "the plan slot is filled");
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
    assert!(s.state.spec.is_none() && s.state.build.is_none());
    assert!(s.table.slot("spec").is_none() && s.table.slot("build").is_none());
}
