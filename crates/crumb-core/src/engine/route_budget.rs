//! Conformance for per-route budgets (`max:`): a looping route fires at most `max` times, and
//! the next match stops the session with `route_budget:<route>` instead of spawning again.

use std::path::Path;

use super::testkit::{Script, done_reason, spawned};
use crate::pipeline::{CompileOptions, compile_str};
use crate::transcript::Kind;

const LOOPER: &str = r"
version: 1
name: looper
roles:
  looper: { template: looper.md.j2, produces: [note, build] }
routes:
  - { on: goal, spawn: looper }
  - { on: note, spawn: looper, max: 2 }
  - { on: build, done: { outcome: pass, reason: built } }
";

fn looper() -> Script {
    let options = CompileOptions {
        check_templates: false,
    };
    let compiled = compile_str(
        LOOPER,
        Path::new("looper.yaml"),
        &options,
        &crate::pipeline::source::InMemory::new().shared(),
    );
    assert!(!compiled.has_errors(), "{:#?}", compiled.diagnostics);
    Script::with(compiled.table.expect("a clean pipeline has a table"))
}

#[test]
fn a_route_with_max_fires_that_often_then_stops_the_session() {
    let mut s = looper();
    assert_eq!(spawned(&s.goal()), ["looper"]);
    for round in 1..=2 {
        let effects = s.send("looper", Kind::Note, |_| {});
        assert_eq!(spawned(&effects), ["looper"], "round {round}");
        assert_eq!(done_reason(&effects), None);
    }
    let effects = s.send("looper", Kind::Note, |_| {});
    assert!(spawned(&effects).is_empty());
    assert_eq!(done_reason(&effects), Some("route_budget:2"));
    assert_eq!(s.state.route_fires.get(&1), Some(&2));
}

#[test]
fn routes_without_max_are_not_counted() {
    let mut s = looper();
    s.goal();
    assert!(s.state.route_fires.is_empty());
    let effects = s.send("looper", Kind::Build, |_| {});
    assert_eq!(done_reason(&effects), Some("built"));
}
