//! `crumb fork`: a session started again from one of another's events — the prefix kept (ids
//! and all), the artifacts as they were restored by hash (or the fork refused), driven on with
//! another mock scenario to its own end, and replayed exactly.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::run::Scratch;

pub(crate) fn lines(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session.join("transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sessions(home: &Path) -> Vec<PathBuf> {
    let project = std::fs::read_dir(home.join("projects"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let mut found: Vec<PathBuf> = std::fs::read_dir(project.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    found.sort();
    found
}

/// `crumb fork <parent> --at <at> --mock-scenario pass --json`, which must pass; its summary.
fn fork_to_pass(scratch: &Scratch, parent: &Path, at: &str) -> Value {
    let run = scratch
        .command(&["fork"])
        .arg(parent)
        .args(["--at", at, "--mock-scenario", "pass", "--json"])
        .run()
        .expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["outcome"], "pass", "{}", run.stdout);
    summary
}

/// The state `crumb replay --json` folds `session` into.
fn replayed(scratch: &Scratch, session: &Path) -> Value {
    let replay = scratch
        .command(&["replay", "--json"])
        .arg(session)
        .run()
        .expect_code(0);
    let state: Value = serde_json::from_str(&replay.stdout).unwrap();
    state.get("state").cloned().unwrap_or(state)
}

fn first(events: &[Value], kind: &str) -> String {
    events.iter().find(|e| e["kind"] == kind).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_fork_of_a_fail_once_session_with_the_pass_scenario_passes_and_replays_exactly() {
    let scratch = Scratch::new();
    let parent = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    let parent_events = lines(&parent);
    // From the spec (a unique prefix of its id, lower case), with the pass scenario.
    let spec = first(&parent_events, "spec");
    let run = scratch
        .command(&["fork"])
        .arg(&parent)
        .args([
            "--at",
            &spec[..22].to_ascii_lowercase(),
            "--mock-scenario",
            "pass",
            "--json",
        ])
        .run()
        .expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["outcome"], "pass");
    let fork = PathBuf::from(summary["folder"].as_str().unwrap());
    let fork_id = summary["session_id"].as_str().unwrap();
    let events = lines(&fork);
    let at = parent_events
        .iter()
        .position(|e| e["id"] == spec.as_str())
        .unwrap();
    // The prefix: the parent's events, ids kept, in the fork's session.
    for (mine, theirs) in events.iter().zip(&parent_events[..=at]) {
        assert_eq!(mine["id"], theirs["id"]);
        assert_eq!(mine["kind"], theirs["kind"]);
        assert_eq!(mine["body"], theirs["body"]);
        assert_eq!(mine["session_id"], fork_id);
    }
    assert_eq!(
        events[0]["data"]["fork"]["parent"],
        parent.file_name().unwrap().to_str().unwrap()
    );
    assert_eq!(events[0]["data"]["fork"]["at"], spec.as_str());
    assert_eq!(events[0]["data"]["mock_scenario"], "pass");
    // What followed is new: one build, one verdict, no repair.
    let after = &events[at + 1..];
    assert!(
        after
            .iter()
            .all(|e| e["id"].as_str().unwrap() > spec.as_str())
    );
    assert_eq!(after.iter().filter(|e| e["kind"] == "build").count(), 1);
    assert_eq!(
        after.iter().filter(|e| e["kind"] == "judge.score").count(),
        1
    );
    // The spec was restored by hash; the game is the fork's own.
    assert_eq!(
        std::fs::read(fork.join("artifacts/spec.md")).unwrap(),
        std::fs::read(parent.join("artifacts/spec.md")).unwrap()
    );
    // Replay of the fork is the state the live drive ended in.
    let state = replayed(&scratch, &fork);
    assert_eq!(state["done"]["outcome"], "pass", "{state}");
    assert_eq!(state["events"], u64::try_from(events.len()).unwrap());
    assert_eq!(state["session_id"], fork_id);
    // And the parent is untouched.
    assert_eq!(lines(&parent), parent_events);
}

/// The fork the store exists for: at the first `qa.result` of a `fail-once` session, before the
/// repair rewrote the game, with the first build's files restored from the store.
#[test]
fn a_fork_at_the_first_qa_result_restores_the_first_build_and_passes() {
    let scratch = Scratch::new();
    let parent = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    let parent_events = lines(&parent);
    let qa = first(&parent_events, "qa.result");
    let first_build = parent_events.iter().find(|e| e["kind"] == "build").unwrap();
    let summary = fork_to_pass(&scratch, &parent, &qa);
    let fork = PathBuf::from(summary["folder"].as_str().unwrap());
    // The repair in the parent rewrote the game; the fork's prefix saw the first build's files,
    // and the fork's own store holds them.
    for artifact in first_build["artifacts"].as_array().unwrap() {
        let sha = artifact["sha256"].as_str().unwrap();
        let stored = fork.join("objects").join(&sha[..2]).join(&sha[2..]);
        let bytes = std::fs::read(&stored).unwrap();
        assert_eq!(crumb_core::digest::sha256_hex(&bytes), sha);
    }
    // Replay of the fork is the state its live drive ended in.
    let state = replayed(&scratch, &fork);
    assert_eq!(state["done"]["outcome"], summary["outcome"], "{state}");
    assert_eq!(state["done"]["reason"], summary["reason"], "{state}");
    assert_eq!(state["events"], u64::try_from(lines(&fork).len()).unwrap());
}

/// A session made before the store (no `objects/`) can fork where its files are unchanged; a
/// point whose files were rewritten since needs `--allow-missing`.
#[test]
fn a_pre_store_session_needs_allow_missing_past_a_rewrite() {
    let scratch = Scratch::new();
    let parent = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    std::fs::remove_dir_all(parent.join("objects")).unwrap();
    let build = first(&lines(&parent), "build");
    let refused = scratch
        .command(&["fork"])
        .arg(&parent)
        .args(["--at", &build, "--mock-scenario", "pass"])
        .run()
        .expect_code(2);
    assert!(
        refused
            .stderr
            .contains("cannot restore artifacts/game/index.html"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        sessions(&scratch.home()).len(),
        1,
        "a refused fork leaves no session"
    );
    scratch
        .command(&["fork"])
        .arg(&parent)
        .args([
            "--at",
            &build,
            "--mock-scenario",
            "pass",
            "--allow-missing",
            "--json",
        ])
        .run()
        .expect_code(0);
}

#[test]
fn a_fork_point_before_the_goal_or_unknown_is_refused() {
    let scratch = Scratch::new();
    scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("a dodger")
        .args(["--adapter", "mock", "--json"])
        .run()
        .expect_code(0);
    let parent = sessions(&scratch.home()).remove(0);
    let start = first(&lines(&parent), "session.start");
    let run = scratch
        .command(&["fork"])
        .arg(&parent)
        .args(["--at", &start])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("at or after the session's `goal`"),
        "{}",
        run.stderr
    );
    let run = scratch
        .command(&["fork"])
        .arg(&parent)
        .args(["--at", "ZZZZ"])
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("no event"), "{}", run.stderr);
}

#[test]
fn a_fork_of_a_session_older_than_its_wall_clock_budget_is_not_stopped_by_it() {
    let scratch = Scratch::new();
    let parent = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    // The parent ran three hours ago: past the pipeline's 60-minute hard wall clock.
    let path = parent.join("transcript.jsonl");
    let mut shifted = String::new();
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let mut event: Value = serde_json::from_str(line).unwrap();
        let ts = chrono::DateTime::parse_from_rfc3339(event["ts"].as_str().unwrap()).unwrap();
        let earlier = ts.with_timezone(&chrono::Utc) - chrono::Duration::hours(3);
        event["ts"] = earlier
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            .into();
        shifted.push_str(&event.to_string());
        shifted.push('\n');
    }
    std::fs::write(&path, shifted).unwrap();
    let spec = first(&lines(&parent), "spec");
    let summary = fork_to_pass(&scratch, &parent, &spec);
    assert_eq!(summary["reason"], "verdict_pass");
}
