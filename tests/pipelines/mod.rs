//! Integration tests: pipeline and preset files — `crumb validate`, `crumb schema`,
//! `crumb explain`, `crumb graph`, and the compiler behind them.
//!
//! Invalid fixtures live in `tests/pipelines/invalid/`, one file per failure mode. Each starts
//! with `# expect: <code> @ <line>`: the test asserts that diagnostic (the line may be in a
//! template the fixture points to) and snapshots the full human and JSON reports.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crumb::exit_codes::INVALID_PIPELINE;
use crumb::pipeline::compile::{CompileOptions, compile_bytes, compile_file, compile_str};
use crumb::pipeline::preset_check::check_preset_bytes;
use crumb::pipeline::table::{Action, Trigger};
use crumb::pipeline::units::{parse_duration_ms, parse_size_bytes};
use crumb::vocab::{Severity, Verdict};
use proptest::prelude::*;
use serde_json::Value;

use crate::support::{crumb, repo_root};

/// YAML files of a fixture folder, relative to the repository root, sorted.
fn fixtures(folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_root().join(folder))
        .expect("fixture folder exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            p.strip_prefix(repo_root())
                .expect("inside the repo")
                .to_path_buf()
        })
        .collect();
    files.sort();
    files
}

/// The `# expect: <code> @ <line>` header of an invalid fixture.
fn expectation(file: &Path) -> (String, Option<u64>) {
    let bytes = std::fs::read(repo_root().join(file)).expect("fixture readable");
    let first = String::from_utf8_lossy(bytes.split(|b| *b == b'\n').next().unwrap_or_default())
        .into_owned();
    let spec = first
        .strip_prefix("# expect: ")
        .unwrap_or_else(|| panic!("{}: missing `# expect:` header", file.display()));
    match spec.split_once(" @ ") {
        Some((code, line)) => (
            code.trim().to_string(),
            Some(line.trim().parse().expect("line number")),
        ),
        None => (spec.trim().to_string(), None),
    }
}

fn snapshot_name(file: &Path, format: &str) -> String {
    let stem = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = stem.trim_end_matches(".yaml").trim_end_matches(".preset");
    format!("invalid_{}_{format}", stem.replace('-', "_"))
}

fixture_tests! {
    folder: "tests/pipelines/invalid", suffix: ".yaml", check: check_invalid,
    listed: every_invalid_fixture_has_a_test,
    invalid_await_without_answer => "await-without-answer.yaml",
    invalid_bad_pipeline_name => "bad-pipeline-name.yaml",
    invalid_done_stopped => "done-stopped.yaml",
    invalid_extends_missing => "extends-missing.yaml",
    invalid_join_without_combine => "join-without-combine.yaml",
    invalid_produces_qa_result => "produces-qa-result.yaml",
    invalid_bad_duration => "bad-duration.yaml",
    invalid_bad_glob => "bad-glob.yaml",
    invalid_bad_size => "bad-size.yaml",
    invalid_browser_check_without_entry => "browser-check-without-entry.yaml",
    invalid_check_timeout_beyond_qa => "check-timeout-beyond-qa.yaml",
    invalid_command_check_empty_argv => "command-check-empty-argv.yaml",
    invalid_command_on_another_adapter_preset => "command-on-another-adapter.preset.yaml",
    invalid_command_path_escapes_root => "command-path-escapes-root.yaml",
    invalid_command_without_argv => "command-without-argv.yaml",
    invalid_done_reason_word => "done-reason-word.yaml",
    invalid_duplicate_check_id => "duplicate-check-id.yaml",
    invalid_duplicate_key => "duplicate-key.yaml",
    invalid_duplicate_role => "duplicate-role.yaml",
    invalid_fragment_key => "fragment-key.yaml",
    invalid_include_cycle => "include-cycle.yaml",
    invalid_include_error_in_fragment => "include-error-in-fragment.yaml",
    invalid_include_missing => "include-missing.yaml",
    invalid_input_declaration => "input-declaration.yaml",
    invalid_input_default_wrong_type => "input-default-wrong-type.yaml",
    invalid_unknown_input_in_template => "unknown-input-in-template.yaml",
    invalid_empty_file => "empty-file.yaml",
    invalid_file_check_min_above_max => "file-check-min-above-max.yaml",
    invalid_from_cannot_produce => "from-cannot-produce.yaml",
    invalid_guard_needs_qa => "guard-needs-qa.yaml",
    invalid_included_template_missing => "included-template-missing.yaml",
    invalid_invalid_verdict => "invalid-verdict.yaml",
    invalid_limits_hard_below_warn => "limits-hard-below-warn.yaml",
    invalid_missing_key => "missing-key.yaml",
    invalid_missing_template => "missing-template.yaml",
    invalid_multiple_documents => "multiple-documents.yaml",
    invalid_no_path_to_done => "no-path-to-done.yaml",
    invalid_not_utf8 => "not-utf8.yaml",
    invalid_produces_runner_kind => "produces-runner-kind.yaml",
    invalid_qa_never_run => "qa-never-run.yaml",
    invalid_qa_result_unhandled => "qa-result-unhandled.yaml",
    invalid_reserved_role_id => "reserved-role-id.yaml",
    invalid_role_never_spawned => "role-never-spawned.yaml",
    invalid_route_with_two_actions => "route-with-two-actions.yaml",
    invalid_route_without_action => "route-without-action.yaml",
    invalid_run_qa_without_qa_block => "run-qa-without-qa-block.yaml",
    invalid_scoring_thresholds_inverted => "scoring-thresholds-inverted.yaml",
    invalid_rubric_property_without_guard => "rubric-property-without-guard.yaml",
    invalid_rubric_duplicate_dimension => "rubric-duplicate-dimension.yaml",
    invalid_join_without_fan_out => "join-without-fan-out.yaml",
    invalid_kind_declares_core => "kind-declares-core.yaml",
    invalid_kind_reserved_namespace => "kind-reserved-namespace.yaml",
    invalid_kind_schema_invalid => "kind-schema-invalid.yaml",
    invalid_shadowed_route => "shadowed-route.yaml",
    invalid_tab_indentation => "tab-indentation.yaml",
    invalid_template_escapes_root => "template-escapes-root.yaml",
    invalid_template_syntax_error => "template-syntax-error.yaml",
    invalid_unhandled_produced_kind => "unhandled-produced-kind.yaml",
    invalid_unknown_check_kind => "unknown-check-kind.yaml",
    invalid_unknown_event_kind => "unknown-event-kind.yaml",
    invalid_unknown_fallback_adapter => "unknown-fallback-adapter.yaml",
    invalid_unknown_guard => "unknown-guard.yaml",
    invalid_unknown_key_in_check => "unknown-key-in-check.yaml",
    invalid_unknown_key => "unknown-key.yaml",
    invalid_unknown_preset_adapter => "unknown-preset-adapter.preset.yaml",
    invalid_unknown_role_in_route => "unknown-role-in-route.yaml",
    invalid_unknown_route_from => "unknown-route-from.yaml",
    invalid_unknown_template_variable => "unknown-template-variable.yaml",
    invalid_unrouted_verdict => "unrouted-verdict.yaml",
    invalid_unsupported_version => "unsupported-version.yaml",
    invalid_when_on_kind_route => "when-on-kind-route.yaml",
    invalid_with_without_spawn => "with-without-spawn.yaml",
    invalid_wrong_type => "wrong-type.yaml",
    invalid_yaml_syntax_error => "yaml-syntax-error.yaml",
    invalid_zero_budget => "zero-budget.yaml",
    invalid_zero_duration => "zero-duration.yaml",
    invalid_errors_in_every_pass => "errors-in-every-pass.yaml",
    invalid_nested_unknown_field => "nested-unknown-field.yaml",
    invalid_template_dynamic_include => "template-dynamic-include.yaml",
    invalid_template_recursive_macro => "template-recursive-macro.yaml",
    invalid_template_runaway_range => "template-runaway-range.yaml",
    invalid_template_self_include => "template-self-include.yaml",
    invalid_unbounded_loop => "unbounded-loop.yaml",
    invalid_unreachable_role => "unreachable-role.yaml",
    invalid_version_overflow => "version-overflow.yaml",
    invalid_template_not_utf8 => "template-not-utf8.yaml",
    invalid_template_loop_field_typo => "template-loop-field-typo.yaml",
    invalid_template_index_field_typo => "template-index-field-typo.yaml",
    invalid_template_loop_predicates => "template-loop-predicates.yaml",
    invalid_template_loop_produces => "template-loop-produces.yaml",
    invalid_template_set_alias => "template-set-alias.yaml",
    invalid_template_macro_field_typo => "template-macro-field-typo.yaml",
    invalid_template_filter_field_typo => "template-filter-field-typo.yaml",
    invalid_template_shape_unknown => "template-shape-unknown.yaml",
    invalid_template_reads_unseen => "template-reads-unseen.yaml",
    invalid_template_reads_unseen_kind => "template-reads-unseen-kind.yaml",
}

/// One invalid fixture: its `# expect:` diagnostic in the JSON report, an explained code, and
/// both reports snapshotted.
fn check_invalid(file: &str) {
    let file = Path::new(file);
    let (code, line) = expectation(file);
    let json = crumb()
        .args(["validate", "--deny-warnings", "--format", "json"])
        .arg(file)
        .run()
        .expect_code(i32::from(INVALID_PIPELINE));
    let report: Value = serde_json::from_str(&json.stdout).expect("json report");
    let diagnostics = report["files"][0]["diagnostics"]
        .as_array()
        .expect("diagnostics array");
    let found = diagnostics
        .iter()
        .any(|d| d["code"] == code.as_str() && line.is_none_or(|l| d["line"] == l));
    assert!(
        found,
        "{}: expected {code} at line {line:?}, got:\n{}",
        file.display(),
        json.stdout
    );
    insta::assert_snapshot!(snapshot_name(file, "json"), json.stdout);

    let human = crumb()
        .args(["validate", "--deny-warnings"])
        .arg(file)
        .run()
        .expect_code(i32::from(INVALID_PIPELINE));
    assert!(
        human.stdout.contains(&format!("[{code}]")),
        "{}: human output lacks {code}",
        file.display()
    );
    assert!(
        human.stderr.contains("— invalid"),
        "summary line on stderr: {}",
        human.stderr
    );
    insta::assert_snapshot!(snapshot_name(file, "human"), human.stdout);

    crumb().args(["explain", &code]).run().expect_code(0);
}

#[test]
fn there_are_at_least_25_failure_modes() {
    let count = fixtures("tests/pipelines/invalid").len();
    assert!(count >= 25, "at least 25 failure modes, found {count}");
}

#[test]
fn warnings_alone_pass_unless_denied() {
    let file = "tests/pipelines/invalid/shadowed-route.yaml";
    let run = crumb().args(["validate", file]).run().expect_code(0);
    assert!(
        run.stdout.contains("warning[crumb::unreachable-route]"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("0 errors, 1 warning — ok"),
        "{}",
        run.stderr
    );
    crumb()
        .args(["validate", "--deny-warnings", file])
        .run()
        .expect_code(i32::from(INVALID_PIPELINE));
}

#[test]
fn valid_fixtures_validate_cleanly() {
    let run = crumb()
        .args(["validate", "--deny-warnings", "tests/pipelines/valid/"])
        .run()
        .expect_code(0);
    for file in fixtures("tests/pipelines/valid") {
        assert!(
            run.stdout.contains(&format!("ok: {}", file.display())),
            "{}",
            run.stdout
        );
    }
}

#[test]
fn shipped_pipelines_and_presets_validate() {
    let run = crumb()
        .args(["validate", "--deny-warnings", "pipelines/", "presets/"])
        .run()
        .expect_code(0);
    let pipelines = fixtures("pipelines");
    let presets = fixtures("presets");
    assert!(
        pipelines.len() >= 2 && presets.len() >= 5,
        "{pipelines:?} {presets:?}"
    );
    for file in pipelines.iter().chain(&presets) {
        assert!(
            run.stdout.contains(&format!("ok: {}", file.display())),
            "{}",
            run.stdout
        );
    }
    // The default path is `pipelines/`.
    crumb().arg("validate").run().expect_code(0);
}

#[test]
fn shipped_pipelines_declare_the_schema_for_editors() {
    for file in fixtures("pipelines") {
        let text = std::fs::read_to_string(repo_root().join(&file)).expect("readable");
        assert!(
            text.starts_with("# yaml-language-server: $schema=../schemas/pipeline.schema.json"),
            "{} must start with the yaml-language-server schema comment",
            file.display()
        );
    }
}

#[test]
fn github_format_is_chosen_in_github_actions() {
    let file = "tests/pipelines/invalid/unknown-role-in-route.yaml";
    let run = crumb()
        .args(["validate", file])
        .env("GITHUB_ACTIONS", "true")
        .run()
        .expect_code(i32::from(INVALID_PIPELINE));
    insta::assert_snapshot!("github_unknown_role", run.stdout);
    assert!(run.stdout.starts_with(&format!(
        "::error file={file},line=12,col=24,title=crumb%3A%3Aunknown-role::"
    )));
    // An explicit --format wins over the environment.
    let human = crumb()
        .args(["validate", "--format", "human", file])
        .env("GITHUB_ACTIONS", "true")
        .run();
    assert!(
        human.stdout.starts_with("error[crumb::unknown-role]"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_ten_megabyte_file_is_refused_quickly_and_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.yaml");
    let line =
        "# padding padding padding padding padding padding padding padding padding padding\n";
    std::fs::write(&path, line.repeat(10 * 1024 * 1024 / line.len() + 1)).expect("write");
    let run = crumb()
        .args(["validate", "--format", "json"])
        .arg(&path)
        .run()
        .expect_code(i32::from(INVALID_PIPELINE));
    let report: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        report["files"][0]["diagnostics"][0]["code"], "crumb::file-too-large",
        "{}",
        run.stdout
    );
}

#[test]
fn a_folder_without_yaml_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), "not a pipeline").expect("write");
    let run = crumb().arg("validate").arg(dir.path()).run().expect_code(2);
    assert!(
        run.stderr
            .contains("no pipeline or preset files (*.yaml, *.yml) in this folder"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn a_missing_path_is_a_usage_error() {
    let run = crumb()
        .args(["validate", "pipelines/does-not-exist.yaml"])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("pipelines/does-not-exist.yaml"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_bad_format_is_a_usage_error() {
    crumb()
        .args(["validate", "--format", "xml"])
        .run()
        .expect_code(2);
}

#[test]
fn committed_schemas_match_the_generated_ones() {
    for (name, file) in [
        ("pipeline", "schemas/pipeline.schema.json"),
        ("preset", "schemas/preset.schema.json"),
    ] {
        let run = crumb().args(["schema", name]).run().expect_code(0);
        let committed = std::fs::read_to_string(repo_root().join(file)).expect("committed schema");
        assert!(
            run.stdout == committed,
            "{file} drifted from `crumb schema {name}`; regenerate it with `crumb schema {name} > {file}`"
        );
        let schema: Value = serde_json::from_str(&run.stdout).expect("schema is JSON");
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    }
}

#[test]
fn every_schema_property_is_described() {
    let run = crumb().args(["schema", "pipeline"]).run().expect_code(0);
    let schema: Value = serde_json::from_str(&run.stdout).expect("json");
    let mut undocumented = Vec::new();
    collect_undocumented(&schema, "", &mut undocumented);
    assert!(
        undocumented.is_empty(),
        "properties without a description: {undocumented:?}"
    );
}

fn collect_undocumented(schema: &Value, at: &str, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                for (name, property) in properties {
                    // The internal tag of a check kind is described by its variant.
                    if property.get("description").is_none() && name != "kind" {
                        out.push(format!("{at}/{name}"));
                    }
                }
            }
            for (key, value) in map {
                collect_undocumented(value, &format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_undocumented(item, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Every `"crumb::…"` literal in the core's pipeline module (where all diagnostics are made).
fn code_literals_in_sources() -> BTreeSet<String> {
    let mut codes = BTreeSet::new();
    let mut stack = vec![repo_root().join("crates/crumb-core/src/pipeline")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("source readable");
                for (i, _) in text.match_indices("\"crumb::") {
                    let rest = &text[i + 1..];
                    let end = rest.find('"').unwrap_or(rest.len());
                    let literal = &rest[..end];
                    if literal.len() > "crumb::".len()
                        && literal["crumb::".len()..]
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c == '-')
                    {
                        codes.insert(literal.to_string());
                    }
                }
            }
        }
    }
    codes
}

#[test]
fn every_code_has_an_explain_entry() {
    let list = crumb().arg("explain").run().expect_code(0);
    let listed: BTreeSet<String> = list
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    let used = code_literals_in_sources();
    assert!(
        used.len() >= 30,
        "expected the pipeline codes in src/, found {used:?}"
    );
    let missing: Vec<&String> = used.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "codes without a `crumb explain` entry: {missing:?}"
    );
    for code in &listed {
        let run = crumb().args(["explain", code]).run().expect_code(0);
        assert!(
            run.stdout.starts_with(code.as_str()) && run.stdout.contains("How to fix: "),
            "{}",
            run.stdout
        );
    }
    insta::assert_snapshot!(
        "explain_unknown_role",
        crumb().args(["explain", "unknown-role"]).run().stdout
    );
}

/// The table of diagnostic codes in `docs/validation.md` is `crumb explain`'s list, row for row (code, level, meaning).
#[test]
fn validation_page_lists_every_diagnostic_code_as_explain_does() {
    let list = crumb().arg("explain").run().expect_code(0);
    let explained: Vec<String> = list
        .stdout
        .lines()
        .filter(|l| l.starts_with("crumb::"))
        .map(|l| {
            let mut parts = l.splitn(2, char::is_whitespace);
            let code = parts.next().unwrap_or_default();
            let rest = parts.next().unwrap_or_default().trim_start();
            let (level, meaning) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            format!("| `{code}` | {level} | {} |", meaning.trim())
        })
        .collect();
    let page = std::fs::read_to_string(repo_root().join("docs/validation.md")).unwrap();
    let table: Vec<&str> = page
        .split_once("| code | level | meaning |\n|---|---|---|\n")
        .expect("docs/validation.md has the diagnostic code table")
        .1
        .lines()
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(
        table, explained,
        "docs/validation.md's code table differs from `crumb explain`"
    );
}

#[test]
fn explain_rejects_unknown_names_with_a_suggestion() {
    let run = crumb()
        .args(["explain", "crumb::unknwn-role"])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("did you mean `crumb::unknown-role`?"),
        "{}",
        run.stderr
    );
}

#[test]
fn graph_draws_every_route_of_the_shipped_pipelines() {
    for file in fixtures("pipelines") {
        let table: Value = serde_json::from_str(
            &crumb()
                .args(["graph", "--format", "json"])
                .arg(&file)
                .run()
                .expect_code(0)
                .stdout,
        )
        .expect("table json");
        let routes = table["routes"].as_array().expect("routes");
        let mermaid = crumb().arg("graph").arg(&file).run().expect_code(0).stdout;
        let dot = crumb()
            .args(["graph", "--format", "dot"])
            .arg(&file)
            .run()
            .expect_code(0)
            .stdout;
        assert!(mermaid.starts_with("flowchart TD\n"));
        assert!(dot.starts_with("digraph "));
        for route in routes {
            // Edge labels number routes from 1, as every message does.
            let marker = format!("\"#{} ", route["index"].as_u64().expect("an index") + 1);
            let edge = |text: &str| {
                text.lines()
                    .any(|l| (l.contains("-->") || l.contains("->")) && l.contains(&marker))
            };
            assert!(
                edge(&mermaid),
                "{}: route {} missing from Mermaid:\n{mermaid}",
                file.display(),
                route["index"]
            );
            assert!(
                edge(&dot),
                "{}: route {} missing from DOT:\n{dot}",
                file.display(),
                route["index"]
            );
        }
        for role in table["roles"].as_array().expect("roles") {
            let id = role["id"].as_str().expect("id");
            assert!(
                mermaid.contains(&format!("[\"{id}\"]")),
                "role {id} is a node"
            );
        }
    }
    insta::assert_snapshot!(
        "graph_casual_mermaid",
        crumb()
            .args(["graph", "pipelines/casual.yaml"])
            .run()
            .stdout
    );
}

#[test]
fn graph_of_an_invalid_pipeline_explains_why() {
    let run = crumb()
        .args([
            "graph",
            "tests/pipelines/invalid/unknown-role-in-route.yaml",
        ])
        .run()
        .expect_code(i32::from(INVALID_PIPELINE));
    assert!(run.stderr.contains("crumb::unknown-role"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

mod compiler;
mod root_causes;
