//! Validation collects across passes: a shape error, a schema error and meaning errors in one
//! file are all reported by one compile, each at its own line.

use crate::pipeline::compile::compile_alone;

fn report(source: &str) -> Vec<(&'static str, u32)> {
    compile_alone(source)
        .diagnostics
        .iter()
        .map(|d| (d.code, d.span.map_or(0, |s| s.line)))
        .collect()
}

#[test]
fn one_run_shows_errors_of_every_pass() {
    let found = report(
        "version: 1
name: t
name: again
roles:
  writer: { template: w.j2, produces: [build], timeout: { wall: 30 minutes } }
routes:
  - { on: goal, spawn: writer, colour: red }
  - { on: build, spawn: ghost }
  - { on: verdict, done: pass }
",
    );
    assert_eq!(
        found,
        [
            ("crumb::duplicate-key", 3),
            ("crumb::unknown-key", 7),
            ("crumb::bad-duration", 5),
            ("crumb::unknown-role", 8),
        ]
    );
}

/// Routes every test below ends with.
const ROUTES: &str = "routes:
  - { on: goal, spawn: writer }
  - { on: build, done: { outcome: pass, reason: built } }
";

#[test]
fn a_misspelt_key_is_one_error_and_its_role_is_not_also_unknown() {
    let found = report(&format!(
        "version: 1\nname: t\nroles:\n  writer: {{ tempalte: w.j2, produces: [build] }}\n{ROUTES}"
    ));
    let codes: Vec<&str> = found.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, ["crumb::unknown-key"]);
}

#[test]
fn meaning_is_checked_past_a_cut_list_element_at_the_right_line() {
    let found = report(&format!(
        "version: 1
name: t
roles:
  writer: {{ template: w.j2, produces: [build] }}
qa:
  checks:
    - {{ id: a, kind: max_bytes, glob: \"*\", limt: 5MB }}
    - {{ id: b, kind: max_bytes, glob: \"[\", limit: 5MB }}
{ROUTES}"
    ));
    let codes: Vec<(&str, u32)> = found
        .into_iter()
        .filter(|(c, _)| *c == "crumb::bad-glob")
        .collect();
    assert_eq!(codes, [("crumb::bad-glob", 8)]);
}

/// A clean pipeline whose values the property below breaks.
const CLEAN: &str = r#"{"version": 1, "name": "t",
  "roles": {"writer": {"template": "w.j2", "produces": ["build"], "timeout": {"wall": "1m"}},
            "judge": {"template": "j.j2", "produces": ["judge.score"]}},
  "qa": {"checks": [{"id": "a", "kind": "file", "path": "x"}, {"id": "b", "kind": "html", "path": "y"}]},
  "routes": [{"on": "goal", "spawn": "writer"}, {"on": "build", "run": "qa"},
             {"on": "qa.result", "spawn": "judge"}, {"on": "verdict", "done": "pass"}],
  "limits": {"tokens": {"warn": 1, "hard": 2}}}"#;

/// Places the property may overwrite.
const POINTERS: &[&str] = &[
    "/version",
    "/roles/writer",
    "/roles/writer/produces",
    "/roles/writer/timeout/wall",
    "/roles/judge/template",
    "/qa/checks/0",
    "/qa/checks/1/kind",
    "/qa",
    "/routes/0/spawn",
    "/routes/1",
    "/routes/2/on",
    "/routes/3/when",
    "/limits/tokens/hard",
    "/limits",
];

fn junk() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z.]{0,8}".prop_map(serde_json::Value::from),
        Just(serde_json::json!([1, "x"])),
        Just(serde_json::json!({"bogus": 1})),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    /// Whatever the schema errors, the salvage never panics, every diagnostic is located inside
    /// the file, and a broken file never yields a table.
    #[test]
    fn salvaging_broken_pipelines_never_panics_and_locates_everything(
        edits in proptest::collection::vec((0..POINTERS.len(), junk()), 1..4)
    ) {
        let mut value: serde_json::Value = serde_json::from_str(CLEAN).expect("valid JSON");
        for (i, junk) in edits {
            if let Some(slot) = value.pointer_mut(POINTERS[i]) {
                *slot = junk;
            }
        }
        let text = serde_json::to_string_pretty(&value).expect("serialises");
        let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
        let compiled = compile_alone(&text);
        for d in &compiled.diagnostics {
            if let Some(span) = d.span {
                proptest::prop_assert!(span.line >= 1 && span.line <= lines, "{d:?}");
            }
        }
        if compiled.has_errors() {
            proptest::prop_assert!(compiled.table.is_none());
        }
    }
}
