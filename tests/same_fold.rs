//! Every reader folds a session the same way: `crumb replay`, `crumb status`, the coordinator's
//! start-up fold (what `crumb resume` folds before it drives) and Studio's hub are fed the same
//! bent transcripts and must agree on the state and on the lines they skipped.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crumb::engine::Replay;
use crumb::runtime::coordinator::{Catchup, Quiet};
use crumb::runtime::session_dir::SessionDir;
use crumb::studio::watched_session::WatchedSession;

use crate::support::{Crumb, crumb, repo_root};

/// A scratch project with the static-QA casual pipeline and its own crumb home.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("pipelines")).expect("mkdir");
        std::fs::copy(
            repo_root().join("tests/fixtures/run/casual-static.yaml"),
            dir.path().join("pipelines/casual-static.yaml"),
        )
        .expect("copy pipeline");
        let templates = dir.path().join("templates");
        std::fs::create_dir_all(&templates).expect("mkdir");
        for entry in std::fs::read_dir(repo_root().join("templates")).expect("templates") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_file() {
                std::fs::copy(entry.path(), templates.join(entry.file_name())).expect("copy");
            }
        }
        Project { dir }
    }

    fn command(&self, args: &[&str]) -> Crumb {
        crumb()
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.dir.path().join("home"))
            .env("CRUMB_STUDIO_PORT", "1")
            .args(args)
    }

    /// A project with a finished mock run (PASS): the session folder and its transcript's text.
    fn with_finished_session() -> (Project, PathBuf, String) {
        let project = Project::new();
        let session = project.finished_session();
        let text = std::fs::read_to_string(session.join("transcript.jsonl")).expect("transcript");
        (project, session, text)
    }

    /// A finished mock run (PASS), and its session folder.
    fn finished_session(&self) -> PathBuf {
        let run = self
            .command(&["run", "pipelines/casual-static.yaml", "a snake game"])
            .args(["--adapter", "mock", "--json"])
            .run()
            .expect_code(0);
        let summary: Value = serde_json::from_str(&run.stdout).expect("run summary");
        PathBuf::from(summary["folder"].as_str().expect("folder"))
    }
}

/// A `note` event line from the system, with an id above every real one.
fn note(session_id: &str, n: u32) -> Value {
    json!({
        "id": format!("7ZZZZZZZZZZZZZZZZZZZZZZZ{n:02}"),
        "ts": "2026-05-01T10:00:00.000Z",
        "session_id": session_id,
        "from": "system",
        "kind": "note",
        "body": format!("note {n}"),
    })
}

fn line(value: &Value) -> String {
    format!("{value}\n")
}

/// One bent line (or pair of lines) per kind of damage, each after a good note.
fn bends(session_id: &str) -> Vec<(&'static str, String)> {
    let with = |n: u32, key: &str, value: Value| {
        let mut event = note(session_id, n);
        event[key] = value;
        line(&event)
    };
    let good = line(&note(session_id, 1));
    let mut lower = note(session_id, 2);
    lower["id"] = json!("7zzzzzzzzzzzzzzzzzzzzzzz02");
    let mut unknown = note(session_id, 4);
    unknown["colour"] = json!("red");
    let torn = line(&note(session_id, 6));
    vec![
        ("bad timestamp", with(3, "ts", json!("yesterday"))),
        ("lower-case id", line(&lower)),
        ("unknown field", line(&unknown)),
        ("bad from", with(5, "from", json!("not a name!"))),
        ("duplicated id", good.clone()),
        ("torn line", format!("{}\n", &torn[..torn.len() / 2])),
        ("crlf", format!("{}\r\n", note(session_id, 7))),
    ]
    .into_iter()
    .map(|(name, bent)| (name, format!("{good}{bent}")))
    .collect()
}

/// What a reader folded: the state and the skipped lines (blank lines are counted differently by
/// a whole-file reader and a tail, so the line count is left out).
fn projection(state: &Value, read: &Value) -> Value {
    json!({
        "state": state,
        "events": read["events"],
        "mapped": read["mapped"],
        "mapping_changes": read["mapping_changes"],
        "skipped": read["skipped"],
        "skipped_lines": read["skipped_lines"],
    })
}

fn cli_fold(project: &Project, command: &str, session: &Path) -> Value {
    let run = project
        .command(&[command, "--json"])
        .arg(session)
        .run()
        .expect_code(0);
    let value: Value = serde_json::from_str(&run.stdout).expect("json output");
    projection(&value["state"], &value["replay"])
}

fn resume_fold(session: &Path) -> Value {
    let dir = SessionDir::open(session).expect("session");
    let table = dir.table().expect("frozen table");
    let catchup = Catchup::read(&dir, &table, &mut Quiet).expect("fold");
    replay_projection(&catchup.replay)
}

fn replay_projection(replay: &Replay) -> Value {
    projection(
        &serde_json::to_value(&replay.state).expect("state"),
        &serde_json::to_value(&replay.stats).expect("stats"),
    )
}

fn studio_fold(session: &Path) -> Value {
    let hub = WatchedSession::open(SessionDir::open(session).expect("session"));
    hub.fold().expect("fold");
    replay_projection(&hub.lock().replay)
}

#[test]
fn replay_status_resume_and_studio_fold_bent_transcripts_the_same() {
    let (project, session, clean) = Project::with_finished_session();
    let transcript = session.join("transcript.jsonl");
    let session_id = session
        .file_name()
        .and_then(|n| n.to_str())
        .expect("id")
        .to_owned();
    let bends = bends(&session_id);
    let mut cases: Vec<(String, String)> = bends
        .iter()
        .map(|(name, bent)| ((*name).to_owned(), format!("{clean}{bent}")))
        .collect();
    cases.push(("bom".to_owned(), format!("\u{feff}{clean}")));
    let all: String = bends.iter().map(|(_, bent)| bent.as_str()).collect();
    cases.push(("all together".to_owned(), format!("\u{feff}{clean}{all}")));
    for (name, text) in cases {
        std::fs::write(&transcript, &text).expect("write transcript");
        let replay = cli_fold(&project, "replay", &session);
        assert_eq!(
            cli_fold(&project, "status", &session),
            replay,
            "status, {name}"
        );
        assert_eq!(resume_fold(&session), replay, "resume, {name}");
        assert_eq!(studio_fold(&session), replay, "studio, {name}");
        let reasons: Vec<&str> = replay["skipped_lines"]
            .as_array()
            .expect("skipped lines")
            .iter()
            .filter_map(|s| s["reason"].as_str())
            .collect();
        if name == "duplicated id" || name == "all together" {
            assert!(
                reasons.iter().any(|r| r.starts_with("duplicate id")),
                "{replay}"
            );
        }
        if name == "all together" {
            assert!(
                reasons.iter().any(|r| r.starts_with("not JSON")),
                "{replay}"
            );
            assert_eq!(
                replay["mapped"], 1,
                "the unknown field is dropped: {replay}"
            );
        }
    }
}

#[test]
fn a_bent_done_line_ends_status_and_resume_the_same_and_is_not_written_twice() {
    let (project, session, text) = Project::with_finished_session();
    let transcript = session.join("transcript.jsonl");
    let mut bent = String::new();
    for l in text.lines() {
        let mut event: Value = serde_json::from_str(l).expect("event");
        if event["kind"] == "done" {
            event["ts"] = json!("not a time");
        }
        bent.push_str(&line(&event));
    }
    std::fs::write(&transcript, bent).expect("write");
    let status = cli_fold(&project, "status", &session);
    let reason = status["state"]["done"]["reason"].clone();
    assert_eq!(reason, "verdict_pass", "{status}");
    let resumed = project
        .command(&["resume", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    let summary: Value = serde_json::from_str(&resumed.stdout).expect("summary");
    assert_eq!(summary["reason"], reason);
    let after = std::fs::read_to_string(&transcript).expect("transcript");
    let dones = after
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == "done")
        .count();
    assert_eq!(dones, 1, "resume wrote no second done:\n{after}");
}

/// A `judge.score`, an `agent.stop` and a `spec` line written twice are each folded once by every
/// reader (verifications, tokens and re-plans not doubled), reported as duplicates, and counted
/// once in `status`'s usage block and by `reader::read_path`.
#[test]
fn duplicated_lines_never_double_budgets_in_any_reader() {
    let (project, session, clean) = Project::with_finished_session();
    let transcript = session.join("transcript.jsonl");
    let clean_fold = cli_fold(&project, "replay", &session);
    let status_text = || {
        project
            .command(&["status"])
            .arg(&session)
            .run()
            .expect_code(0)
            .stdout
    };
    let clean_usage = status_text();
    let mut doubled = String::new();
    let mut copies = 0;
    for l in clean.lines() {
        doubled.push_str(l);
        doubled.push('\n');
        let kind = serde_json::from_str::<Value>(l).expect("event")["kind"].clone();
        if ["judge.score", "agent.stop", "spec"].contains(&kind.as_str().unwrap_or("")) {
            doubled.push_str(l);
            doubled.push('\n');
            copies += 1;
        }
    }
    assert!(copies >= 3, "{clean}");
    std::fs::write(&transcript, &doubled).expect("write");
    let replay = cli_fold(&project, "replay", &session);
    for field in ["verification", "budgets", "roles", "done"] {
        assert_eq!(
            replay["state"][field], clean_fold["state"][field],
            "{field} folded once"
        );
    }
    assert_eq!(replay["skipped"], copies, "{replay}");
    assert_eq!(cli_fold(&project, "status", &session), replay);
    assert_eq!(resume_fold(&session), replay);
    assert_eq!(studio_fold(&session), replay);
    let status = status_text();
    let usage = |text: &str| {
        text.lines()
            .skip_while(|l| !l.starts_with("usage"))
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(usage(&status), usage(&clean_usage), "{status}");
    let (events, issues) = crumb::transcript::reader::read_path(&transcript).expect("read");
    assert_eq!(events.len(), clean.lines().count());
    assert_eq!(issues.len(), copies);
    assert!(issues.iter().all(|i| i.message.starts_with("duplicate id")));
}
