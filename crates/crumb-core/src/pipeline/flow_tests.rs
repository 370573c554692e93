//! The route graph's verdicts on small pipelines: unbounded loops, roles no reachable route
//! spawns, and one error per root cause.

use crate::pipeline::Diagnostic;
use crate::pipeline::compile::compile_alone;

/// The codes `crumb validate` reports for `routes` over a writer (→ build, note) and a looper
/// (→ note), in order.
fn codes(routes: &str) -> Vec<&'static str> {
    let source = format!(
        "version: 1\nname: t\nroles:\n  writer: {{ template: w.j2, produces: [build, note] }}\n  looper: {{ template: w.j2, produces: [note] }}\nroutes:\n{routes}"
    );
    compile_alone(&source)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

/// The `unbounded-loop` diagnostics of a whole pipeline file.
fn loops(source: &str) -> Vec<Diagnostic> {
    compile_alone(source)
        .diagnostics
        .into_iter()
        .filter(|d| d.code == "crumb::unbounded-loop")
        .collect()
}

#[test]
fn a_loop_without_a_budget_is_an_error_naming_the_cycle() {
    let source = "version: 1\nname: t\nroles:\n  looper: { template: w.j2, produces: [note, build] }\nroutes:\n  - { on: goal, spawn: looper }\n  - { on: note, spawn: looper }\n  - { on: build, done: { outcome: pass, reason: built } }\n";
    let loops = loops(source);
    assert_eq!(loops.len(), 1, "{loops:#?}");
    assert_eq!(loops[0].message, "unbounded loop: note → looper → note");
    assert_eq!(loops[0].span.map(|s| s.line), Some(7));
}

#[test]
fn max_a_verdict_or_a_person_bounds_a_loop() {
    let looping = "  - { on: goal, spawn: writer }\n  - { on: build, done: { outcome: pass, reason: built } }\n";
    assert_eq!(
        codes(&format!("{looping}  - {{ on: note, spawn: looper }}\n")),
        ["crumb::unbounded-loop"]
    );
    assert!(
        codes(&format!(
            "{looping}  - {{ on: note, spawn: looper, max: 3 }}\n"
        ))
        .is_empty()
    );
    // (the looper is then never spawned, which is only a warning)
    assert_eq!(
        codes(&format!(
            "{looping}  - {{ on: note, await: human }}\n  - {{ on: user.approve, done: pass }}\n"
        )),
        ["crumb::role-never-spawned"]
    );
}

#[test]
fn a_two_route_cycle_is_reported_once_at_the_route_that_closes_it() {
    let source = "version: 1\nname: t\nroles:\n  a: { template: w.j2, produces: [build] }\n  b: { template: w.j2, produces: [note, handoff.requested] }\nroutes:\n  - { on: goal, spawn: a }\n  - { on: build, spawn: b }\n  - { on: note, spawn: a }\n  - { on: handoff.requested, done: { outcome: pass, reason: ok } }\n";
    let loops = loops(source);
    assert_eq!(loops.len(), 1, "{loops:#?}");
    assert_eq!(
        loops[0].message,
        "unbounded loop: build → b → note → a → build"
    );
    assert_eq!(loops[0].span.map(|s| s.line), Some(9));
}

#[test]
fn a_role_only_an_unreachable_route_spawns_is_never_spawned() {
    let found = codes(
        "  - { on: goal, spawn: writer }\n  - { on: build, done: { outcome: pass, reason: built } }\n  - { on: note, done: { outcome: pass, reason: noted } }\n  - { on: step.design, spawn: looper }\n",
    );
    assert_eq!(
        found,
        ["crumb::role-never-spawned", "crumb::unreachable-route"]
    );
}

#[test]
fn reachability_does_not_stop_at_the_first_done() {
    // `goal` reaches `done` at once, but the looper is still reachable through `note`.
    let found = codes(
        "  - { on: goal, spawn: writer }\n  - { on: build, done: { outcome: pass, reason: built } }\n  - { on: note, spawn: looper, max: 2 }\n",
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn an_unknown_role_is_one_error_not_three() {
    let found = codes(
        "  - { on: goal, spawn: wrtier }\n  - { on: build, done: { outcome: pass, reason: built } }\n  - { on: note, spawn: looper, max: 2 }\n",
    );
    assert_eq!(found, ["crumb::unknown-role"]);
}

#[test]
fn qa_error_is_a_trigger_of_run_qa_and_its_loop_needs_a_budget() {
    let pipeline = |route: &str| {
        format!(
            "version: 1\nname: t\nroles:\n  writer: {{ template: w.j2, produces: [build] }}\nqa:\n  checks: [{{ id: f, kind: file, path: x }}]\n  retry: {{ max: 0 }}\nroutes:\n  - {{ on: goal, spawn: writer }}\n  - {{ on: build, run: qa }}\n  - {{ on: qa.result, done: pass }}\n{route}"
        )
    };
    let codes = |source: &str| -> Vec<&'static str> {
        compile_alone(source)
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect()
    };
    assert!(codes(&pipeline("")).is_empty());
    assert!(codes(&pipeline("  - { on: qa.error, done: fail }\n")).is_empty());
    let looping = loops(&pipeline("  - { on: qa.error, run: qa }\n"));
    assert_eq!(looping.len(), 1, "{looping:#?}");
    assert_eq!(
        looping[0].message,
        "unbounded loop: qa.error → run qa → qa.error"
    );
    assert!(codes(&pipeline("  - { on: qa.error, run: qa, max: 3 }\n")).is_empty());
}
