//! `pipelines/code.yaml` end to end, offline: spec → implementation → QA that runs the unit tests
//! → review, on the scripted example agents through the `command` adapter. The second run's first
//! implementation has a real bug, so the tests fail, the reviewer sends it back and the revision
//! passes.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::support::Run;

const TASK: &str = "a slugify function for blog titles";
/// Every run here finishes in a few seconds; this only bounds a hang.
const LIMIT: Duration = Duration::from_secs(120);

fn run(home: &tempfile::TempDir, env: &[(&str, &str)]) -> Run {
    crate::support::run_shipped(
        home.path(),
        "pipelines/code.yaml",
        TASK,
        &["--wall-timeout", "60s", "--idle-timeout", "30s"],
        env,
        LIMIT,
    )
}

fn session(home: &tempfile::TempDir) -> (PathBuf, Vec<Value>) {
    crate::support::only_session(&home.path().join("home"))
}

/// The unit-test check's status in each `qa.result`, in order.
fn test_runs(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "qa.result")
        .map(|e| {
            e["data"]["checks"]
                .as_array()
                .and_then(|checks| checks.iter().find(|c| c["id"] == "unit-tests"))
                .map_or_else(|| "missing".to_owned(), |c| c["status"].to_string())
        })
        .collect()
}

#[test]
fn the_code_pipeline_passes_offline_on_its_example_agents() {
    let home = tempfile::tempdir().expect("tempdir");
    let run = run(&home, &[]).expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["reason"], "verdict_pass", "{}", run.stderr);
    let (dir, events) = session(&home);
    assert_eq!(test_runs(&events), ["\"pass\""]);
    let solution = std::fs::read_to_string(dir.join("artifacts/code/solution.py")).expect("code");
    assert!(solution.contains("def slugify"), "{solution}");
    let roles: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "agent.wake")
        .filter_map(|e| e["from"].as_str())
        .collect();
    assert_eq!(roles, ["specifier", "implementer", "code-reviewer"]);
}

#[test]
fn failing_tests_send_the_code_back_and_the_revision_passes() {
    let home = tempfile::tempdir().expect("tempdir");
    let run = run(&home, &[("CRUMB_EXAMPLE_FAIL_FIRST", "1")]).expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["verifications"], 2, "{}", run.stdout);
    let (_, events) = session(&home);
    assert_eq!(test_runs(&events), ["\"fail\"", "\"pass\""]);
    let verdicts: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "judge.score")
        .map(|e| &e["scores"]["verdict"])
        .collect();
    assert_eq!(verdicts, [&Value::from("FAIL"), &Value::from("PASS")]);
}
