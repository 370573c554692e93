//! `crumb tail`: a session's events as human lines or exactly its JSONL, following a live session
//! until `session.end`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{Crumb, crumb};

/// A scratch project holding the static casual pipeline, with its own crumb home.
struct Project {
    root: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let root = tempfile::tempdir().expect("tempdir");
        let project = root.path().join("project");
        crate::support::casual_static_project(&project);
        Project { root }
    }

    fn crumb(&self, args: &[&str]) -> Crumb {
        crumb()
            .current_dir(self.root.path().join("project"))
            .env("CRUMB_HOME", self.root.path().join("home"))
            .args(args)
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }
}

/// The lines of `folder`'s transcript.
fn transcript_lines(folder: &Path) -> Vec<String> {
    std::fs::read_to_string(folder.join("transcript.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn kind_of(line: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).expect("JSON line");
    value["kind"].as_str().unwrap_or_default().to_owned()
}

/// A PARTIAL session waits for a person; `tail --follow --json --from` its `session.awaiting`
/// prints that line, keeps following while `/approve` drives the session on, and ends on
/// `session.end` having printed exactly the transcript's lines from there on.
#[test]
fn follow_json_prints_exactly_the_transcript_from_an_id_until_session_end() {
    let project = Project::new();
    let run = project
        .crumb(&["run", "pipelines/casual-static.yaml", "a snake game"])
        .args(["--adapter", "mock", "--mock-scenario", "partial", "--wait"])
        .spawn();
    let folder = crate::support::awaiting_session(&project.home());
    let before = transcript_lines(&folder);
    let awaiting = before
        .iter()
        .find(|l| kind_of(l) == "session.awaiting")
        .expect("awaiting line")
        .clone();
    let awaiting_id = serde_json::from_str::<serde_json::Value>(&awaiting).expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let folder_arg = folder.to_str().expect("utf-8");
    let (tail, lines) = project
        .crumb(&[
            "tail",
            folder_arg,
            "--follow",
            "--json",
            "--from",
            &awaiting_id,
        ])
        .spawn_lines();
    let first = lines
        .recv_timeout(Duration::from_secs(60))
        .expect("tail prints the awaiting event");
    assert_eq!(first, awaiting);

    project
        .crumb(&["say", folder_arg, "/approve"])
        .run()
        .expect_code(0);
    let tailed = tail.wait().expect_code(0);
    run.wait().expect_code(0);

    let after = transcript_lines(&folder);
    let start = after.iter().position(|l| *l == awaiting).expect("awaiting");
    let end = after
        .iter()
        .position(|l| kind_of(l) == "session.end")
        .expect("session.end");
    let expected: Vec<&str> = after[start..=end].iter().map(String::as_str).collect();
    assert!(
        expected.len() > 2,
        "the approval wrote events: {expected:?}"
    );
    assert_eq!(tailed.stdout.lines().collect::<Vec<_>>(), expected);

    // Without --follow on the ended session, --kinds keeps only those kinds, in file order.
    let kinds = project
        .crumb(&[
            "tail",
            folder_arg,
            "--json",
            "--kinds",
            "session.end,session.awaiting",
        ])
        .run()
        .expect_code(0);
    let shown: Vec<String> = kinds.stdout.lines().map(kind_of).collect();
    assert_eq!(shown, ["session.awaiting", "session.end"]);
}

/// The human lines: time, writer, kind and a one-line preview of the body.
#[test]
fn human_lines_of_a_finished_transcript() {
    let run = crumb()
        .args(["tail", "tests/fixtures/engine/casual-pass.jsonl"])
        .run()
        .expect_code(0);
    insta::assert_snapshot!("tail_human_lines", run.stdout);
}

/// A `--kinds` entry that cannot be an event kind is a usage error, not an empty result.
#[test]
fn a_malformed_kind_is_a_usage_error() {
    let run = crumb()
        .args([
            "tail",
            "tests/fixtures/engine/casual-pass.jsonl",
            "--kinds",
            "no such kind",
        ])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("`no such kind` is not an event kind"),
        "{}",
        run.stderr
    );
}

/// Without `--follow` every event is printed, also those after a `session.end` (a transcript
/// that goes on after its end, as a resumed one may): `--json` reprints the file byte for byte.
#[test]
fn without_follow_it_prints_every_event_even_after_session_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = std::fs::read_to_string(
        crate::support::repo_root().join("tests/fixtures/engine/casual-pass.jsonl"),
    )
    .expect("fixture");
    let twice = dir.path().join("transcript.jsonl");
    std::fs::write(&twice, fixture.repeat(2)).expect("write");
    let run = crumb()
        .arg("tail")
        .arg(&twice)
        .arg("--json")
        .run()
        .expect_code(0);
    assert_eq!(run.stdout, fixture.repeat(2));
}
