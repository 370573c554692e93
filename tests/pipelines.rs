//! Integration tests: pipeline and preset files — `crumb validate`, `crumb schema`,
//! `crumb explain`, `crumb graph`, and the compiler behind them.
//!
//! Invalid fixtures live in `tests/pipelines/invalid/`, one file per failure mode. Each starts
//! with `# expect: <code> @ <line>`: the test asserts that diagnostic (the line may be in a
//! template the fixture points to) and snapshots the full human and JSON reports.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crumb::pipeline::compile::{CompileOptions, compile_bytes, compile_file, compile_str};
use crumb::pipeline::preset::check_preset_bytes;
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

#[test]
fn every_invalid_fixture_fails_with_its_code_at_its_line() {
    let files = fixtures("tests/pipelines/invalid");
    assert!(
        files.len() >= 25,
        "at least 25 failure modes, found {}",
        files.len()
    );
    for file in &files {
        let (code, line) = expectation(file);
        let json = crumb()
            .args(["validate", "--deny-warnings", "--format", "json"])
            .arg(file)
            .run()
            .expect_code(1);
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
            .expect_code(1);
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
    }
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
        .expect_code(1);
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
        .expect_code(1);
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
        .expect_code(1);
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

/// Every `"crumb::…"` literal in the pipeline module (where all diagnostics are made).
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

#[test]
fn every_fixture_code_is_an_explained_code() {
    let listed = crumb().arg("explain").run().expect_code(0).stdout;
    for file in fixtures("tests/pipelines/invalid") {
        let (code, _) = expectation(&file);
        assert!(
            listed.contains(&code),
            "{} expects unknown code {code}",
            file.display()
        );
    }
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
            let marker = format!("\"#{} ", route["index"]);
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
        .expect_code(1);
    assert!(run.stderr.contains("crumb::unknown-role"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

#[test]
fn casual_compiles_to_the_expected_table() {
    let compiled = compile_file(
        &repo_root().join("pipelines/casual.yaml"),
        &CompileOptions::default(),
    );
    assert!(
        compiled.diagnostics.is_empty(),
        "{:?}",
        compiled.diagnostics
    );
    assert_eq!(compiled.source_hash.len(), 64);
    let table = compiled.table.expect("table");
    assert_eq!(table.name, "casual");
    assert_eq!(
        table.route_for("goal", "user").map(|r| &r.action),
        Some(&Action::Spawn {
            role: "planner-lead".into()
        })
    );
    assert_eq!(
        table.route_for("build", "builder").map(|r| &r.action),
        Some(&Action::RunQa)
    );
    let pass = table
        .route_for_verdict(Verdict::Pass, Severity::Minor)
        .expect("PASS routed");
    assert_eq!(
        pass.action,
        Action::Done {
            reason: "verdict_pass".into()
        }
    );
    let redesign = table
        .route_for_verdict(Verdict::Reject, Severity::Critical)
        .expect("routed");
    assert_eq!(
        redesign.action,
        Action::Spawn {
            role: "planner-lead".into()
        }
    );
    assert!(redesign.with_feedback);
    let repair = table
        .route_for_verdict(Verdict::Fail, Severity::Minor)
        .expect("routed");
    assert_eq!(
        repair.action,
        Action::Spawn {
            role: "builder".into()
        }
    );
    assert!(
        table.verdict_matrix.iter().flatten().all(Option::is_some),
        "exhaustive"
    );
    assert!(matches!(table.routes[4].trigger, Trigger::Verdict { .. }));
    assert_eq!(
        table.role("builder").map(|r| r.wall_timeout_ms),
        Some(30 * 60 * 1000)
    );
    assert_eq!(table.limits.wall_clock_hard_ms, 60 * 60 * 1000);
}

#[test]
fn compile_str_without_templates_needs_no_files() {
    let text =
        std::fs::read_to_string(repo_root().join("pipelines/casual.yaml")).expect("readable");
    // A path where nothing exists: the frozen copy inside a session.
    let origin = Path::new("/nonexistent/session/pipeline.yaml");
    let compiled = compile_str(
        &text,
        origin,
        &CompileOptions {
            check_templates: false,
        },
    );
    assert!(compiled.table.is_some(), "{:?}", compiled.diagnostics);
    let same = compile_file(
        &repo_root().join("pipelines/casual.yaml"),
        &CompileOptions::default(),
    );
    assert_eq!(compiled.table, same.table, "one compiler, one meaning");
    assert_eq!(compiled.source_hash, same.source_hash);
}

#[test]
fn template_escape_is_refused_even_through_a_symlink() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("pipelines")).expect("mkdir");
    let outside = dir.path().join("secret.md.j2");
    std::fs::write(&outside, "{{ goal }}").expect("write");
    std::os::unix::fs::symlink(&outside, project.join("link.md.j2")).expect("symlink");
    let pipeline = project.join("pipelines/p.yaml");
    std::fs::write(
        &pipeline,
        "version: 1\nname: p\nroles:\n  w: { template: ../link.md.j2, produces: [build] }\nroutes:\n  - { on: goal, spawn: w }\n  - { on: build, done: ok }\n",
    )
    .expect("write");
    let compiled = compile_file(&pipeline, &CompileOptions::default());
    assert!(
        compiled
            .diagnostics
            .iter()
            .any(|d| d.code == "crumb::template-escapes-root"),
        "{:?}",
        compiled.diagnostics
    );
}

const CASUAL: &str = include_str!("../pipelines/casual.yaml");

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_the_loader(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let compiled = compile_bytes(&bytes, Path::new("fuzz.yaml"), &CompileOptions { check_templates: false });
        prop_assert!(compiled.table.is_none() || compiled.diagnostics.iter().all(|d| !d.is_error()));
        let _ = check_preset_bytes(&bytes, Path::new("fuzz.preset.yaml"));
    }

    #[test]
    fn unit_parsers_never_panic_and_round_trip(text in "\\PC{0,40}", n in 0u64..=u64::MAX) {
        let _ = parse_duration_ms(&text);
        let _ = parse_size_bytes(&text);
        prop_assert_eq!(parse_duration_ms(&format!("{n}ms")), Ok(n));
        prop_assert_eq!(parse_size_bytes(&format!("{n}B")), Ok(n));
        let minutes = format!("{n}m");
        match n.checked_mul(60_000) {
            Some(ms) => prop_assert_eq!(parse_duration_ms(&minutes), Ok(ms)),
            None => prop_assert!(parse_duration_ms(&minutes).is_err()),
        }
        let mebibytes = format!("{n}MiB");
        match n.checked_mul(1 << 20) {
            Some(bytes) => prop_assert_eq!(parse_size_bytes(&mebibytes), Ok(bytes)),
            None => prop_assert!(parse_size_bytes(&mebibytes).is_err()),
        }
    }

    #[test]
    fn yaml_ish_text_never_panics_the_loader(text in "[a-z_:{}\\[\\], \\-\\n\\t#'\"&*!|>%@.0-9]{0,400}") {
        let compiled = compile_str(&text, Path::new("fuzz.yaml"), &CompileOptions { check_templates: false });
        prop_assert!(compiled.has_errors() || compiled.table.is_some());
    }

    #[test]
    fn mutated_pipelines_never_panic_and_errors_have_locations(
        at in 0usize..CASUAL.len(),
        cut in 0usize..40,
        insert in "[a-z:{}\\[\\],\\- \\n]{0,8}",
    ) {
        let start = (0..=at).rev().find(|i| CASUAL.is_char_boundary(*i)).unwrap_or(0);
        let end = (start + cut..=CASUAL.len()).find(|i| CASUAL.is_char_boundary(*i)).unwrap_or(CASUAL.len());
        let text = format!("{}{insert}{}", &CASUAL[..start], &CASUAL[end..]);
        let compiled = compile_str(&text, Path::new("mutant.yaml"), &CompileOptions { check_templates: false });
        for diagnostic in &compiled.diagnostics {
            // Whole-file problems are the only ones allowed to lack a position.
            let whole_file = ["crumb::empty-file", "crumb::wrong-type"].contains(&diagnostic.code);
            prop_assert!(diagnostic.span.is_some() || whole_file, "{diagnostic:?}");
        }
    }
}

#[test]
fn graph_node_ids_stay_distinct_when_names_sanitise_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = dir.path().join("p.yaml");
    std::fs::write(
        &pipeline,
        "version: 1\nname: p\nroles:\n  a-b: { template: t.j2, produces: [spec] }\n  a_b: { template: t.j2, produces: [build] }\nroutes:\n  - { on: goal, spawn: a-b }\n  - { on: spec, spawn: a_b }\n  - { on: build, done: \"said \\\"done\\\"\" }\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("t.j2"), "{{ goal }}").expect("write");
    let mermaid = crumb()
        .arg("graph")
        .arg(&pipeline)
        .run()
        .expect_code(0)
        .stdout;
    assert!(
        mermaid.contains("role_a_b[\"a-b\"]") && mermaid.contains("role_a_b_2[\"a_b\"]"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("role_a_b -->|\"#1 spec\"| role_a_b_2"),
        "{mermaid}"
    );
    let dot = crumb()
        .args(["graph", "--format", "dot"])
        .arg(&pipeline)
        .run()
        .expect_code(0)
        .stdout;
    assert!(
        dot.contains("[label=\"done: said \\\"done\\\"\", shape=doublecircle]"),
        "{dot}"
    );
}

#[test]
fn presets_are_recognised_by_content_outside_the_presets_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("mine.yaml");
    std::fs::copy(repo_root().join("presets/cross.yaml"), &copy).expect("copy");
    let run = crumb().arg("validate").arg(&copy).run().expect_code(0);
    assert!(run.stdout.starts_with("ok: "), "{}", run.stdout);
}
