use super::{Options, check};
use crate::pipeline::compile::{CompileOptions, compile_str};
use crate::pipeline::table::TransitionTable;
use crate::vocab::Outcome;

fn table(yaml: &str) -> TransitionTable {
    let compiled = compile_str(
        yaml,
        std::path::Path::new("tests/pipelines/check/x.yaml"),
        &CompileOptions {
            check_templates: false,
        },
        &crate::pipeline::source::InMemory::new().shared(),
    );
    compiled
        .table
        .unwrap_or_else(|| panic!("compiles: {:#?}", compiled.diagnostics))
}

const LOOP: &str = "version: 1
name: loop
roles:
  writer: { template: w.md.j2, produces: [build, note] }
  looper: { template: w.md.j2, produces: [note] }
routes:
  - { on: goal, spawn: writer }
  - { on: note, spawn: looper, max: 3 }
  - { on: build, done: { outcome: pass, reason: built } }
";

#[test]
fn casual_is_proven_with_every_outcome_it_declares() {
    let report = check(&crate::engine::testkit::casual(), Options::default());
    assert!(report.ok(), "{}", report.text());
    let reasons: Vec<(Outcome, &str)> = report
        .outcomes
        .iter()
        .map(|r| (r.outcome, r.reason.as_str()))
        .collect();
    for expected in [
        (Outcome::Pass, "verdict_pass"),
        (Outcome::Pass, "approved"),
        (Outcome::Fail, "pass_without_qa"),
        (Outcome::Stopped, "too_many_verify"),
        (Outcome::Stopped, "too_many_respec"),
        (Outcome::Stopped, "circuit_open:builder"),
    ] {
        assert!(reasons.contains(&expected), "{expected:?} in {reasons:?}");
    }
    assert!(report.declared_unreached.is_empty(), "{}", report.text());
    // A verdict pass always went through a passing QA run: the guard is the engine's, not ours.
    let pass = report
        .outcomes
        .iter()
        .find(|r| r.reason == "verdict_pass")
        .expect("a pass");
    assert!(
        pass.path.iter().any(|s| s.starts_with("QA passes")),
        "{:?}",
        pass.path
    );
    // Five verifications at most, each possibly retried twice after a failed turn.
    assert_eq!(
        report.max_turns_per_role["verifier"],
        15,
        "{}",
        report.text()
    );
}

#[test]
fn a_route_budget_bounds_a_loop_and_its_removal_is_found_with_the_path() {
    let bounded = table(LOOP);
    let report = check(&bounded, Options::default());
    assert!(report.ok(), "{}", report.text());
    assert!(
        report.outcomes.iter().any(|r| r.reason == "route_budget:2"),
        "{}",
        report.text()
    );

    // The same table without the route's `max:` (validate would refuse to compile it).
    let mut unbounded = bounded;
    unbounded.routes[1].max = None;
    let report = check(&unbounded, Options::default());
    let finding = report
        .findings
        .iter()
        .find(|f| f.code == "unbounded-loop")
        .unwrap_or_else(|| panic!("an unbounded loop: {}", report.text()));
    assert!(
        finding
            .path
            .iter()
            .any(|s| s.starts_with("↻ looper writes note → spawn looper")),
        "{:?}",
        finding.path
    );
}

#[test]
fn a_build_no_route_takes_is_a_dead_end() {
    let report = check(
        &table(
            "version: 1
name: dead-end
roles:
  writer: { template: w.md.j2, produces: [build] }
  editor: { template: w.md.j2, produces: [build] }
routes:
  - { on: goal, spawn: writer }
  - { on: build, from: writer, spawn: editor }
  - { on: user.approve, done: pass }
",
        ),
        Options::default(),
    );
    let finding = &report.findings[0];
    assert_eq!(finding.code, "dead-end", "{}", report.text());
    assert_eq!(
        finding.path,
        [
            "goal → spawn writer",
            "writer writes build → spawn editor",
            "editor writes build"
        ]
    );
}

#[test]
fn the_state_limit_is_a_violation_not_a_proof() {
    let report = check(
        &crate::engine::testkit::casual(),
        Options {
            max_states: 10,
            ..Options::default()
        },
    );
    assert!(report.findings.iter().any(|f| f.code == "state-limit"));
}

/// A route no explored step ever fires is listed: here the PARTIAL band is empty (`partial_at`
/// equals `pass_at`), so the PARTIAL route and the approve that answers it are dead declarations.
#[test]
fn routes_no_path_fires_are_listed_as_never_reached() {
    let report = check(
        &table(
            "version: 1
name: band
roles:
  writer: { template: w.md.j2, produces: [build] }
  judge: { template: j.md.j2, produces: [judge.score] }
routes:
  - { on: goal, spawn: writer }
  - { on: build, spawn: judge }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, when: { verdict: PARTIAL }, await: human }
  - { on: verdict, spawn: writer, with: feedback }
  - { on: user.approve, done: { outcome: pass, reason: approved } }
scoring: { pass_at: 24, partial_at: 24 }
",
        ),
        Options::default(),
    );
    assert_eq!(
        report.declared_unreached,
        [
            "route 4: on verdict PARTIAL never fires",
            "route 6: done pass (approved)"
        ],
        "{}",
        report.text()
    );
}
