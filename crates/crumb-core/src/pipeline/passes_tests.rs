//! Validation collects across passes: a shape error, a schema error and meaning errors in one
//! file are all reported by one compile, each at its own line.

use std::path::Path;

use crate::pipeline::{CompileOptions, compile_str};

fn report(source: &str) -> Vec<(&'static str, u32)> {
    let options = CompileOptions {
        check_templates: false,
    };
    compile_str(source, Path::new("t.yaml"), &options)
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
  - { on: build, done: built }
";

#[test]
fn a_role_cut_for_a_schema_error_is_not_also_an_unknown_role() {
    let found = report(&format!(
        "version: 1\nname: t\nroles:\n  writer: {{ tempalte: w.j2, produces: [build] }}\n{ROUTES}"
    ));
    let codes: Vec<&str> = found.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, ["crumb::missing-key", "crumb::unknown-key"]);
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
