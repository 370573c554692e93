//! Integration tests: `crumb replay` and `crumb status` through the real binary, on real
//! transcripts (ours, hostile ones, and legacy ones written in older event shapes).

use std::path::{Path, PathBuf};

use crate::support::{crumb, repo_root};

/// The pipeline the fixture transcripts ran with; they record no hash, so replay needs it named.
const CASUAL: &str = "pipelines/casual.yaml";

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/engine").join(name)
}

/// Replace the machine-specific path of `path` in `text`.
fn redact(text: &str, path: &Path) -> String {
    text.replace(&path.display().to_string(), "[TRANSCRIPT]")
}

#[test]
fn replay_summarises_a_finished_casual_session() {
    let path = fixture("casual-pass.jsonl");
    let run = crumb()
        .args(["replay", "--pipeline", CASUAL])
        .arg(&path)
        .run()
        .expect_code(0);
    insta::assert_snapshot!("replay_casual_pass", redact(&run.stdout, &path));
}

#[test]
fn replay_json_is_byte_identical_across_runs() {
    let path = fixture("casual-pass.jsonl");
    let first = crumb()
        .args(["replay", "--json", "--pipeline", CASUAL])
        .arg(&path)
        .run()
        .expect_code(0);
    let second = crumb()
        .args(["replay", "--json", "--pipeline", CASUAL])
        .arg(&path)
        .run()
        .expect_code(0);
    assert_eq!(first.stdout, second.stdout);
    let value: serde_json::Value = serde_json::from_str(&first.stdout).expect("--json prints JSON");
    assert_eq!(value["state"]["done"]["reason"], "verdict_pass");
    assert_eq!(value["state"]["verification"]["count"], 2);
    assert_eq!(
        value["state"]["verification"]["previous"]["corrected"]["verdict"],
        "FAIL"
    );
    assert_eq!(value["replay"]["skipped"], 0);
}

#[test]
fn replay_survives_hostile_lines_and_reports_them_with_line_numbers() {
    let path = fixture("bad-input.jsonl");
    let run = crumb()
        .args(["replay", "--pipeline", CASUAL])
        .arg(&path)
        .run()
        .expect_code(0);
    insta::assert_snapshot!("replay_bad_input", redact(&run.stdout, &path));
    assert!(run.stdout.contains("line 3: not JSON"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("line 5: unknown event kind `telepathy.result`"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("line 13: not JSON"),
        "the torn last line: {}",
        run.stdout
    );
}

#[test]
fn replay_skips_a_line_that_is_not_utf8_and_folds_the_rest_the_same() {
    let clean = std::fs::read(fixture("casual-pass.jsonl")).expect("fixture");
    let mut bent = Vec::new();
    for (index, line) in clean.split_inclusive(|b| *b == b'\n').enumerate() {
        if index == 2 {
            bent.extend_from_slice(b"{\"id\": \"\xff\xfe\", \"kind\": \"goal\"}\n");
        }
        bent.extend_from_slice(line);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let bent_path = dir.path().join("bent.jsonl");
    std::fs::write(&bent_path, &bent).expect("write transcript");
    let replay = |path: &Path| -> serde_json::Value {
        let run = crumb()
            .args(["replay", "--json", "--pipeline", CASUAL])
            .arg(path)
            .run()
            .expect_code(0);
        serde_json::from_str(&run.stdout).expect("--json prints JSON")
    };
    let clean_value = replay(&fixture("casual-pass.jsonl"));
    let bent_value = replay(&bent_path);
    assert_eq!(bent_value["state"], clean_value["state"]);
    assert_eq!(bent_value["replay"]["skipped"], 1);
    assert_eq!(bent_value["replay"]["skipped_lines"][0]["line"], 3);
    assert_eq!(
        bent_value["replay"]["events"],
        clean_value["replay"]["events"]
    );
}

#[test]
fn replay_reads_a_five_megabyte_event_body() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("transcript.jsonl");
    let body = "x".repeat(5 * 1024 * 1024);
    let goal = serde_json::json!({
        "id": "01KBS000000000000000000001", "ts": "2026-05-01T10:00:00.000Z", "session_id": "s",
        "from": "user", "kind": "goal", "body": body
    });
    let spec = serde_json::json!({
        "id": "01KBS000000000000000000002", "ts": "2026-05-01T10:00:01.000Z", "session_id": "s",
        "from": "planner-lead", "kind": "spec"
    });
    std::fs::write(&path, format!("{goal}\n{spec}\n")).expect("write transcript");
    let run = crumb()
        .args(["replay", "--json", "--pipeline", CASUAL])
        .arg(dir.path())
        .run()
        .expect_code(0);
    let value: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(value["replay"]["events"], 2);
    assert_eq!(value["state"]["roles"]["builder"]["spawns"], 1);
    // The state keeps a bounded copy of the goal, not 5 MB.
    assert!(value["state"]["goal"].as_str().expect("goal").len() < 10_000);
}

fixture_tests! {
    folder: "tests/fixtures/transcripts/legacy", suffix: ".jsonl", check: replay_legacy,
    listed: every_legacy_transcript_has_a_test,
    replay_reads_legacy_mock_run_1 => "mock-run-1.jsonl",
    replay_reads_legacy_mock_run_2 => "mock-run-2.jsonl",
    replay_reads_legacy_real_01kqms9e5m1z7tef32e81yxagt => "real-01KQMS9E5M1Z7TEF32E81YXAGT.jsonl",
    replay_reads_legacy_real_01kqnak1cxtbdebx2wp2qqk891 => "real-01KQNAK1CXTBDEBX2WP2QQK891.jsonl",
    replay_reads_legacy_real_01kqq40dcpnghf54p2bjkp10mh => "real-01KQQ40DCPNGHF54P2BJKP10MH.jsonl",
}

/// A transcript in older event shapes (scores under `data.scores`, budget endings, no ending at
/// all): `crumb replay` reads it, maps what it can and reports the rest.
fn replay_legacy(file: &str) {
    let path = repo_root().join(file);
    let run = crumb()
        .args(["replay", "--pipeline", CASUAL])
        .arg(&path)
        .run();
    assert_eq!(run.code, 0, "{}\n{}", path.display(), run.stderr);
    let name = path
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    insta::assert_snapshot!(format!("replay_legacy_{name}"), redact(&run.stdout, &path));
}

#[test]
fn replay_of_a_legacy_mock_run_reaches_verdict_pass() {
    let path = repo_root().join("tests/fixtures/transcripts/legacy/mock-run-1.jsonl");
    let run = crumb()
        .args(["replay", "--json", "--pipeline", CASUAL])
        .arg(&path)
        .run()
        .expect_code(0);
    let value: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(value["state"]["done"]["reason"], "verdict_pass");
    assert_eq!(
        value["state"]["verification"]["latest"]["corrections"],
        serde_json::json!([])
    );
}

/// Replay never guesses: a transcript without a frozen pipeline needs `--pipeline`; one that
/// records no hash (a legacy one) takes the file as given and says so.
#[test]
fn replay_without_a_frozen_pipeline_needs_pipeline() {
    let path = fixture("casual-pass.jsonl");
    for command in ["replay", "status"] {
        let run = crumb().arg(command).arg(&path).run().expect_code(2);
        assert!(
            run.stderr.contains("no frozen pipeline") && run.stderr.contains("--pipeline FILE"),
            "{command}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty());
    }
    let run = crumb()
        .args(["replay", "--pipeline", CASUAL])
        .arg(&path)
        .run()
        .expect_code(0);
    assert!(
        run.stdout.contains(
            "pipeline    casual (--pipeline pipelines/casual.yaml; the transcript records no pipeline hash, so it is taken as given)"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn replay_of_a_missing_transcript_is_a_usage_error() {
    let run = crumb()
        .args(["replay", "tests/fixtures/engine/no-such-file.jsonl"])
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("crumb replay:"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

#[test]
fn status_shows_progress_recent_events_and_the_scorecard() {
    let path = fixture("casual-pass.jsonl");
    let run = crumb()
        .args(["status", "--pipeline", CASUAL])
        .arg(&path)
        .run()
        .expect_code(0);
    insta::assert_snapshot!("status_casual_pass", run.stdout);
}

#[test]
fn status_of_an_unfinished_session_awaiting_a_person() {
    let dir = tempfile::tempdir().expect("tempdir");
    let full = std::fs::read_to_string(fixture("casual-pass.jsonl")).expect("fixture");
    // Up to the first verdict, with the verifier claiming PARTIAL on a good QA run.
    let mut lines: Vec<String> = full.lines().take(8).map(str::to_owned).collect();
    lines.push(
        r#"{"id":"01KBS000000000000000000030","ts":"2026-05-01T10:05:00.000Z","session_id":"s","from":"system","kind":"qa.result","data":{"exec_exit_code":0}}"#
            .to_owned(),
    );
    lines.push(
        r#"{"id":"01KBS000000000000000000031","ts":"2026-05-01T10:06:00.000Z","session_id":"s","from":"verifier","kind":"judge.score","scores":{"D1":{"score":3,"source":"verifier-llm"},"D2":{"score":5,"source":"qa-check-effect"},"D3":{"score":3,"source":"verifier-llm"},"D4":{"score":3,"source":"reducer-auto"},"D5":{"score":3,"source":"verifier-llm"},"D6":{"score":3,"source":"qa-check-effect"},"aggregate":20,"verdict":"PARTIAL"}}"#
            .to_owned(),
    );
    std::fs::write(dir.path().join("transcript.jsonl"), lines.join("\n")).expect("write");
    let run = crumb()
        .args(["status", "--pipeline", CASUAL])
        .arg(dir.path())
        .run()
        .expect_code(0);
    assert!(run.stdout.contains("awaiting a person"), "{}", run.stdout);
    assert!(
        run.stdout.contains("verdict    PARTIAL → PARTIAL"),
        "{}",
        run.stdout
    );
}
