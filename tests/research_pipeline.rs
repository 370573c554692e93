//! `pipelines/research.yaml` end to end, offline: a pipeline with no plan or build slot whose
//! roles exchange kinds it declares for itself (`research.note`, `research.request`, `draft`),
//! two reviewers in parallel and a majority join, on the scripted example agents through the
//! `command` adapter. Replay, status and export read the declared kinds and rubric like any
//! other.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::support::{Run, crumb};

const QUESTION: &str = "why do bridges sway";
/// Every run here finishes in a few seconds; this only bounds a hang.
const LIMIT: Duration = Duration::from_secs(120);

fn run(home: &tempfile::TempDir, env: &[(&str, &str)]) -> Run {
    crate::support::run_shipped(
        home.path(),
        "pipelines/research.yaml",
        QUESTION,
        &[],
        env,
        LIMIT,
    )
}

fn session(home: &tempfile::TempDir) -> (PathBuf, Vec<Value>) {
    crate::support::only_session(&home.path().join("home"))
}

/// The kinds of the events `role` wrote, in order (its own outputs, not the runner's).
fn written_by<'a>(events: &'a [Value], role: &str) -> Vec<&'a str> {
    events
        .iter()
        .filter(|e| e["from"] == role)
        .filter_map(|e| e["kind"].as_str())
        .filter(|k| !k.starts_with("agent.") && !k.starts_with("tool."))
        .collect()
}

#[test]
fn the_research_pipeline_passes_offline_on_kinds_of_its_own() {
    let home = tempfile::tempdir().expect("tempdir");
    let run = run(&home, &[]).expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["reason"], "verdict_pass", "{}", run.stderr);
    let (dir, events) = session(&home);
    assert_eq!(
        written_by(&events, "researcher"),
        ["research.note", "research.note"]
    );
    assert_eq!(written_by(&events, "writer"), ["research.request", "draft"]);
    let report = std::fs::read_to_string(dir.join("artifacts/doc/report.md")).expect("report");
    assert!(report.contains("## Sources"), "{report}");
    // Replay folds the declared kinds (nothing skipped) and status lists them.
    let replay = crumb()
        .args(["replay", "--json"])
        .arg(&dir)
        .timeout(LIMIT)
        .run()
        .expect_code(0);
    let replay: Value = serde_json::from_str(&replay.stdout).expect("replay JSON");
    assert_eq!(replay["replay"]["skipped"], 0, "{replay:#}");
    assert!(replay["state"]["spec"].is_null() && replay["state"]["build"].is_null());
    let status = crumb()
        .arg("status")
        .arg(&dir)
        .timeout(LIMIT)
        .run()
        .expect_code(0);
    assert!(
        status.stdout.contains("  joined     PASS × "),
        "{}",
        status.stdout
    );
    let export = crumb()
        .arg("export")
        .arg(&dir)
        .args(["--format", "md"])
        .timeout(LIMIT)
        .run()
        .expect_code(0);
    // The export draws the declared rubric and the verdict the routes acted on.
    assert!(
        export.stdout.contains("| coverage | 5.0 | 5.0 |"),
        "{}",
        export.stdout
    );
    assert!(
        export.stdout.contains("- **verdict**: PASS 22.0/25"),
        "{}",
        export.stdout
    );
}

/// One reviewer fails the first draft, the other passes it: the summary shows the combined
/// FAIL's consequence (a revision) and, at the end, the verdict the routes acted on with each
/// branch's.
#[test]
fn a_split_review_sends_the_draft_back_and_the_summary_shows_each_branch() {
    let home = tempfile::tempdir().expect("tempdir");
    let run = run(&home, &[("CRUMB_EXAMPLE_FAIL_FIRST", "1")]).expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["verifications"], 4, "{}", run.stdout);
    let (_, events) = session(&home);
    let joins: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "hook" && e["data"]["hook"] == "join")
        .map(|e| &e["data"]["verdict"])
        .collect();
    assert_eq!(joins, [&Value::from("FAIL"), &Value::from("PASS")]);
    assert_eq!(summary["verdict"]["joined"], true);
    assert_eq!(summary["verdict"]["combine"], "majority");
    assert_eq!(
        summary["verdict"]["branches"].as_array().map(Vec::len),
        Some(2)
    );
}

/// A writer that asks for research forever is stopped by the route's `max:`.
#[test]
fn research_requests_are_bounded_by_the_routes_budget() {
    let home = tempfile::tempdir().expect("tempdir");
    let run = run(&home, &[("CRUMB_EXAMPLE_NOTES", "99")]).expect_code(23);
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["reason"], "route_budget:3", "{}", run.stdout);
    let (_, events) = session(&home);
    assert_eq!(written_by(&events, "researcher").len(), 3);
}
