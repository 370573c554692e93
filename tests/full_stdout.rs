//! Every command with its stdout on `/dev/full`: no panic, exit 1 naming the cause, and what the
//! command did is done (a run still reaches its outcome and leaves its session whole).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::CommandFactory;
use serde_json::Value;

use crate::support::{Crumb, Run, crumb, repo_root};

/// Commands left out, and why.
const NOT_PRINTING_HERE: &[(&str, &str)] = &[
    (
        "studio",
        "serves until stopped; its start lines go through the same writer as `run`'s",
    ),
    (
        "mock-agent",
        "the mock agent's own process, whose stdout is the dispatcher's pipe",
    ),
    (
        "turn-shim",
        "every agent turn's parent; it prints nothing of its own and its agent's stdout is the dispatcher's pipe",
    ),
    ("help", "clap's own"),
    (
        "lsp",
        "speaks only when its editor asks; a closed or full pipe ends it (tests/lsp drives it)",
    ),
];

/// A project with the offline doc-review pipeline and a crumb home, and one finished session.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        for folder in ["pipelines", "templates", "examples"] {
            crate::support::copy_dir(&repo_root().join(folder), &dir.path().join(folder));
        }
        Project { dir }
    }

    fn crumb(&self) -> Crumb {
        crumb()
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.dir.path().join("home"))
            .env("CRUMB_STUDIO_PORT", "1")
            .timeout(Duration::from_secs(120))
    }

    /// `crumb <args>` with stdout on `/dev/full`.
    fn to_full(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut command = Crumb::shell(r#"exec "$CRUMB" "$@" > /dev/full"#)
            .arg("sh")
            .args(args)
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.dir.path().join("home"))
            .env("CRUMB_STUDIO_PORT", "1")
            .timeout(Duration::from_secs(120));
        if let Some(input) = stdin {
            command = command.stdin(input);
        }
        command.run()
    }

    fn sessions(&self) -> Vec<PathBuf> {
        let mut sessions: Vec<PathBuf> = std::fs::read_dir(self.dir.path().join("home/projects"))
            .into_iter()
            .flatten()
            .flat_map(|p| std::fs::read_dir(p.expect("entry").path().join("sessions")))
            .flatten()
            .map(|s| s.expect("entry").path())
            .filter(|s| s.join("meta.json").is_file())
            .collect();
        sessions.sort();
        sessions
    }
}

fn done_reason(project: &Project, session: &Path) -> Value {
    let run = project
        .crumb()
        .args(["replay", "--json"])
        .arg(session)
        .run()
        .expect_code(0);
    let replay: Value = serde_json::from_str(&run.stdout).expect("JSON");
    replay["state"]["done"]["reason"].clone()
}

/// The ids of the session's `goal` and of its last event.
fn goal_and_last(session: &Path) -> (String, String) {
    let events: Vec<Value> = std::fs::read_to_string(session.join("transcript.jsonl"))
        .expect("transcript")
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect();
    let id = |event: Option<&Value>| {
        event
            .and_then(|e| e["id"].as_str().map(str::to_owned))
            .expect("an event")
    };
    (
        id(events.iter().find(|event| event["kind"] == "goal")),
        id(events.last()),
    )
}

fn assert_full(run: &Run, what: &str) {
    assert_eq!(run.code, 1, "{what}: {}", run.stderr);
    assert!(
        !run.stderr.contains("panicked"),
        "{what} panicked: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("No space left on device"),
        "{what} names the cause: {}",
        run.stderr
    );
}

#[test]
fn every_command_with_stdout_on_dev_full_exits_1_without_a_panic() {
    let project = Project::new();
    let pipeline = "pipelines/doc-review.yaml";
    let run = project.to_full(&["run", pipeline, "why sourdough needs time"], None);
    assert_full(&run, "run");
    let sessions = project.sessions();
    assert_eq!(sessions.len(), 1);
    let session = sessions[0].clone();
    assert_eq!(
        done_reason(&project, &session),
        "verdict_pass",
        "the run reached its outcome"
    );
    let s = session.to_str().expect("utf-8");
    let (goal, last) = goal_and_last(&session);
    let copy = project.dir.path().join("copy");
    let copy = copy.to_str().unwrap();
    std::fs::write(project.dir.path().join("pitches.txt"), "why bread rises\n").expect("pitches");
    let artifacts = format!("{s}/artifacts");
    let new_project = project.dir.path().join("new");
    let mut covered = vec!["run"];
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("batch", vec!["batch", pipeline, "pitches.txt"]),
        ("fork", vec!["fork", s, "--at", &goal]),
        ("resume", vec!["resume", s]),
        ("validate", vec!["validate", pipeline]),
        ("check", vec!["check", pipeline]),
        (
            "init",
            vec![
                "init",
                "--from",
                "doc-review",
                new_project.to_str().unwrap(),
            ],
        ),
        ("schema", vec!["schema", "pipeline"]),
        ("explain", vec!["explain"]),
        ("export", vec!["export", "--format", "md", s]),
        ("graph", vec!["graph", pipeline]),
        ("replay", vec!["replay", s]),
        ("status", vec!["status", s]),
        ("qa", vec!["qa", pipeline, &artifacts]),
        ("ls", vec!["ls"]),
        ("tail", vec!["tail", s]),
        ("watch", vec!["watch", s]),
        ("say", vec!["say", s, "hello"]),
        ("mcp", vec!["mcp", "--print-config", "claude"]),
        ("doctor", vec!["doctor"]),
        ("why", vec!["why", s]),
        ("release", vec!["release", s, "--as", "full-stdout"]),
        ("versions", vec!["versions"]),
        (
            "copy-artifacts",
            vec!["copy-artifacts", "full-stdout", "--to", copy],
        ),
        ("diff", vec!["diff", s, &goal, &last]),
    ];
    for (name, args) in &cases {
        assert_full(&project.to_full(args, None), name);
        covered.push(name);
    }
    // After `resume`, which revokes every capability issued before it.
    let capability = crate::support::open_turn(
        &session,
        session.file_name().unwrap().to_str().unwrap(),
        "writer",
    );
    let run = Crumb::shell(r#"exec "$CRUMB" event > /dev/full"#)
        .env("CRUMB_CAPABILITY", capability.token())
        .stdin(r#"{"kind":"note","body":"written all the same"}"#)
        .run();
    assert_full(&run, "event");
    covered.push("event");
    assert!(
        std::fs::read_to_string(session.join("transcript.jsonl"))
            .expect("transcript")
            .contains("written all the same"),
        "the event was written; only its output is lost"
    );
    assert_eq!(
        done_reason(&project, &session),
        "verdict_pass",
        "no command changed the outcome"
    );
    for command in crumb::cli::Cli::command().get_subcommands() {
        let name = command.get_name();
        assert!(
            covered.contains(&name) || NOT_PRINTING_HERE.iter().any(|(n, _)| *n == name),
            "`crumb {name}` is not run with a full stdout here"
        );
    }
}
