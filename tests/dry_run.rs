//! `crumb run --dry-run`: every shipped pipeline played to each of its outcomes by a scripted
//! verdict sequence, with no agent; the session is marked as a dry run in its transcript and
//! summary.

use serde_json::Value;

use crate::support::{Run, crumb, repo_root};

fn dry_run(home: &tempfile::TempDir, pipeline: &str, script: &[&str]) -> Run {
    crumb()
        .current_dir(home.path())
        .env("CRUMB_HOME", home.path().join("home"))
        .env("CRUMB_STUDIO_PORT", "1")
        .arg("run")
        .arg(repo_root().join(pipeline))
        .args(["a goal", "--new", "--dry-run", "--json"])
        .args(script)
        .run()
}

/// Every line of the one transcript of the session `summary` names.
fn transcript(summary: &Value) -> Vec<Value> {
    let folder = summary["folder"].as_str().expect("a folder");
    std::fs::read_to_string(std::path::Path::new(folder).join("transcript.jsonl"))
        .expect("transcript")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// `(pipeline, script, outcome, reason)`: a script that plays each pipeline to each outcome.
const CASES: &[(&str, &str, &str, &str)] = &[
    ("pipelines/casual.yaml", "PASS", "pass", "verdict_pass"),
    (
        "pipelines/casual.yaml",
        "PARTIAL,APPROVE",
        "pass",
        "approved",
    ),
    (
        "pipelines/casual.yaml",
        "QA:FAIL,PARTIAL,APPROVE",
        "fail",
        "pass_without_qa",
    ),
    (
        "pipelines/casual.yaml",
        "FAIL:Critical,FAIL:Critical,FAIL:Critical,FAIL:Critical",
        "stopped",
        "too_many_respec",
    ),
    (
        "pipelines/casual.yaml",
        "FAIL,FAIL,FAIL,FAIL,FAIL",
        "stopped",
        "too_many_verify",
    ),
    ("pipelines/doc-review.yaml", "PASS", "pass", "verdict_pass"),
    (
        "pipelines/doc-review.yaml",
        "REJECT",
        "rejected",
        "rejected",
    ),
    (
        "pipelines/doc-review.yaml",
        "FAIL,PARTIAL,FAIL,FAIL",
        "stopped",
        "too_many_verify",
    ),
    (
        "pipelines/code.yaml",
        "FAIL:Important,PASS",
        "pass",
        "verdict_pass",
    ),
    (
        "pipelines/code.yaml",
        "REJECT:Critical",
        "rejected",
        "task_rejected",
    ),
    (
        "pipelines/code.yaml",
        "FAIL:Critical,PARTIAL:Critical,FAIL:Critical",
        "stopped",
        "too_many_respec",
    ),
    (
        "pipelines/code.yaml",
        "FAIL,FAIL,FAIL,FAIL",
        "stopped",
        "too_many_verify",
    ),
    // Two judges at once: each judging turn takes the next verdict; the join combines them.
    (
        "pipelines/cross-verify.yaml",
        "PASS,PASS",
        "pass",
        "verdict_pass",
    ),
    (
        "pipelines/cross-verify.yaml",
        "REJECT,PASS",
        "rejected",
        "rejected",
    ),
    (
        "pipelines/cross-verify.yaml",
        "FAIL,PASS,FAIL,PASS,FAIL,PASS,FAIL,PASS",
        "stopped",
        "too_many_verify",
    ),
    (
        "pipelines/research.yaml",
        "PASS,PASS",
        "pass",
        "verdict_pass",
    ),
    (
        "pipelines/research.yaml",
        "PARTIAL,PARTIAL,APPROVE",
        "pass",
        "approved",
    ),
    (
        "pipelines/research.yaml",
        "REJECT,REJECT",
        "rejected",
        "rejected",
    ),
    (
        "pipelines/research.yaml",
        "FAIL,FAIL,FAIL,FAIL",
        "stopped",
        "too_many_verify",
    ),
    // The writer asks for research each turn until the route's `max: 2` stops it.
    (
        "pipelines/research.yaml",
        "WRITE:research.request,WRITE:research.request,WRITE:research.request",
        "stopped",
        "route_budget:3",
    ),
];

/// Every shipped pipeline has cases, and every outcome `crumb check` proves reachable is played,
/// except the circuit breaker's (a dry run's turns never fail).
#[test]
fn the_cases_cover_every_shipped_pipeline_and_every_proven_outcome() {
    // Every shipped pipeline has cases here.
    for entry in std::fs::read_dir(repo_root().join("pipelines")).expect("pipelines") {
        let name = format!(
            "pipelines/{}",
            entry.expect("entry").file_name().to_string_lossy()
        );
        assert!(
            CASES.iter().any(|(pipeline, ..)| *pipeline == name),
            "{name} has no dry-run case"
        );
    }
    // …and every outcome `crumb check` proves reachable is played, except the circuit
    // breaker's (a dry run's turns never fail).
    let check = crumb()
        .args(["check", "--format", "json"])
        .arg(repo_root().join("pipelines"))
        .run()
        .expect_code(0);
    let proved: Value = serde_json::from_str(&check.stdout).expect("check JSON");
    for pipeline in proved.as_array().expect("pipelines") {
        let name = format!(
            "pipelines/{}.yaml",
            pipeline["pipeline"].as_str().unwrap_or("?")
        );
        for reached in pipeline["outcomes"].as_array().expect("outcomes") {
            let reason = reached["reason"].as_str().unwrap_or_default();
            if reason.starts_with("circuit_open:") {
                continue;
            }
            assert!(
                CASES.iter().any(|(p, _, outcome, r)| *p == name
                    && reached["outcome"] == *outcome
                    && *r == reason),
                "{name}: no dry-run case plays {reached}"
            );
        }
    }
}

#[test]
fn every_shipped_pipeline_plays_to_each_outcome_by_its_script() {
    let home = tempfile::tempdir().expect("tempdir");
    for (pipeline, script, outcome, reason) in CASES {
        let run = dry_run(&home, pipeline, &["--script", script]).expect_code(0);
        let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
        assert_eq!(
            (summary["outcome"].as_str(), summary["reason"].as_str()),
            (Some(*outcome), Some(*reason)),
            "{pipeline} {script}: {summary:#}"
        );
        assert_eq!(summary["dry_run"], true);
        assert_eq!(summary["unused_script_entries"], 0, "{summary:#}");
        let events = transcript(&summary);
        assert_eq!(
            events[0]["data"]["dry_run"], true,
            "session.start is marked"
        );
        let done: Vec<&Value> = events.iter().filter(|e| e["kind"] == "done").collect();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0]["data"]["dry_run"], true, "done is marked");
        assert_eq!(done[0]["data"]["outcome"], *outcome);
        assert!(
            events.iter().all(|e| e["kind"] != "agent.wake"),
            "no agent ran"
        );
        assert_eq!(events.last().expect("events")["kind"], "session.end");
    }
}

#[test]
fn a_script_file_and_the_human_summary_say_it_is_a_dry_run() {
    let home = tempfile::tempdir().expect("tempdir");
    let file = home.path().join("script.yaml");
    std::fs::write(&file, "- FAIL:Important\n- PASS\n").expect("write");
    let run = crumb()
        .current_dir(home.path())
        .env("CRUMB_HOME", home.path().join("home"))
        .env("CRUMB_STUDIO_PORT", "1")
        .arg("run")
        .arg(repo_root().join("pipelines/doc-review.yaml"))
        .arg("a goal")
        .args(["--dry-run", "--script-file"])
        .arg(&file)
        .run()
        .expect_code(0);
    assert!(
        run.stdout.contains("DRY RUN: no agent ran"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("reviewer judges FAIL × Important → spawn writer"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("DRY RUN  the route ends pass (verdict_pass); this is the route, not a result of the work"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_script_that_runs_out_or_does_not_parse_is_a_usage_error() {
    let home = tempfile::tempdir().expect("tempdir");
    let run = dry_run(&home, "pipelines/casual.yaml", &["--script", "FAIL"]).expect_code(2);
    assert!(
        run.stderr
            .contains("verifier judges next and the script has no verdict left"),
        "{}",
        run.stderr
    );
    let run = dry_run(&home, "pipelines/casual.yaml", &["--script", "PASS,MAYBE"]).expect_code(2);
    assert!(
        run.stderr.contains("script entry 2 `MAYBE`"),
        "{}",
        run.stderr
    );
}

/// A claim the guards correct says so in the route: a PASS after failed QA is what the routes
/// saw as FAIL, so its step reads `corrected to FAIL`, and a claim left as it was reads plainly.
#[test]
fn a_corrected_claim_says_what_the_routes_saw() {
    let home = tempfile::tempdir().unwrap();
    let run = dry_run(
        &home,
        "pipelines/casual.yaml",
        &["--script", "QA:FAIL,PASS,PASS"],
    );
    let summary: Value = serde_json::from_str(&run.stdout).expect("JSON summary");
    let steps: Vec<&str> = summary["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(Value::as_str)
        .filter(|s| s.contains(" judges "))
        .collect();
    assert_eq!(
        steps,
        [
            "verifier judges PASS × Important, corrected to FAIL → spawn builder",
            "verifier judges PASS × Important → done pass (verdict_pass)",
        ],
        "{}",
        run.stdout
    );
}
