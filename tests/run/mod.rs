//! `crumb run` and `crumb resume` end to end: the real binary, the mock agent as real child
//! processes, a scratch project and a scratch `CRUMB_HOME`. Every transcript written here is
//! checked line by line against `schemas/transcript.schema.json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Run, Running, copy_dir, crumb, eventually, repo_root};

const PITCH: &str = "60-second match-3 with combo bonus";

/// A scratch project holding the static-QA variant of the casual pipeline, and a crumb home.
pub(crate) struct Scratch {
    pub(crate) dir: tempfile::TempDir,
}

impl Scratch {
    pub(crate) fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
        std::fs::copy(
            repo_root().join("tests/fixtures/run/casual-static.yaml"),
            dir.path().join("pipelines/casual-static.yaml"),
        )
        .unwrap();
        copy_dir(
            &repo_root().join("templates"),
            &dir.path().join("templates"),
        );
        Scratch { dir }
    }

    pub(crate) fn pipeline(&self) -> PathBuf {
        self.dir.path().join("pipelines/casual-static.yaml")
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `crumb run` on the mock adapter with `scenario` (and more arguments).
    fn run(&self, scenario: &str, extra: &[&str]) -> Run {
        self.command(&["run"])
            .arg(self.pipeline())
            .arg(PITCH)
            .args(["--adapter", "mock", "--json", "--mock-scenario", scenario])
            .args(extra)
            .run()
    }

    /// `crumb run` on the mock adapter, human output (no `--json`).
    fn run_human(&self) -> Run {
        self.command(&["run"])
            .arg(self.pipeline())
            .arg(PITCH)
            .args(["--adapter", "mock"])
            .run()
    }

    /// `crumb <args> <path>`.
    fn on(&self, args: &[&str], path: &Path) -> Run {
        self.command(args).arg(path).run()
    }

    pub(crate) fn command(&self, args: &[&str]) -> crate::support::Crumb {
        crumb()
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.home())
            // Nothing listens on port 1: no Studio found unless a test starts one.
            .env("CRUMB_STUDIO_PORT", "1")
            .args(args)
    }

    /// The same run as a background process (for mid-run inbox lines and kills).
    fn spawn_run(&self, scenario: &str, delay_ms: u64, extra: &[&str]) -> Running {
        self.command(&["run"])
            .env("CRUMB_MOCK_DELAY_MS", delay_ms.to_string())
            .env_remove("CRUMB_IDLE_TIMEOUT")
            .arg(self.pipeline())
            .arg(PITCH)
            .args(["--adapter", "mock", "--json", "--mock-scenario", scenario])
            .args(extra)
            .spawn()
    }

    /// `crumb resume --json` on `session`, expected to finish (exit 0).
    fn resume(&self, session: &Path) -> Run {
        self.command(&["resume", "--json"])
            .arg(session)
            .run()
            .expect_code(0)
    }

    /// The only session of this home.
    fn session(&self) -> PathBuf {
        let projects = self.home().join("projects");
        let mut found = Vec::new();
        for project in std::fs::read_dir(&projects).unwrap() {
            for session in std::fs::read_dir(project.unwrap().path().join("sessions")).unwrap() {
                found.push(session.unwrap().path());
            }
        }
        assert_eq!(found.len(), 1, "expected exactly one session: {found:?}");
        found.remove(0)
    }

    /// The id (folder name) of the only session.
    fn session_id(&self) -> String {
        self.session()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    fn say(&self, session: &Path, line: &str) {
        self.command(&["say"])
            .arg(session)
            .arg(line)
            .run()
            .expect_code(0);
    }
}

/// Every line of the session's transcript, each checked against the committed schema.
fn transcript(session: &Path) -> Vec<Value> {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("schemas/transcript.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let text = std::fs::read_to_string(session.join("transcript.jsonl")).unwrap();
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {}: not JSON ({e}): {line}", n + 1));
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "line {} violates the transcript schema: {errors:?}\n{line}",
                n + 1
            );
            value
        })
        .collect()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

fn summary(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "--json summary is not JSON ({e}):\n{}\n{}",
            run.stdout, run.stderr
        )
    })
}

/// No effect has two outcomes: each effect id completes at most once per outcome kind, and the
/// session ends exactly once.
fn assert_effects_once(events: &[Value]) {
    let mut outcomes: HashMap<(String, String), usize> = HashMap::new();
    for event in events {
        let kind = event["kind"].as_str().unwrap();
        if let Some(id) = event["metadata"]["effect_id"].as_str()
            && kind != "agent.wake"
        {
            *outcomes
                .entry((id.to_owned(), kind.to_owned()))
                .or_default() += 1;
        }
    }
    let twice: Vec<_> = outcomes.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "effects carried out twice: {twice:?}");
    assert_eq!(of_kind(events, "done").len(), 1, "exactly one done");
    assert_eq!(
        events.last().unwrap()["kind"],
        "session.end",
        "session.end is the last line"
    );
}

/// Poll the transcript until `ready` holds (the mock's delay keeps the session in that state).
fn wait_for(
    session_dir: impl Fn() -> Option<PathBuf>,
    ready: impl Fn(&[Value]) -> bool,
) -> PathBuf {
    eventually(
        "the session to reach the expected state",
        Duration::from_secs(60),
        || {
            let dir = session_dir()?;
            let text = std::fs::read_to_string(dir.join("transcript.jsonl")).unwrap_or_default();
            let events: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            ready(&events).then_some(dir)
        },
    )
}

/// A condition on the transcript so far.
type Ready = fn(&[Value]) -> bool;

fn any_session(home: &Path) -> Option<PathBuf> {
    let project = std::fs::read_dir(home.join("projects"))
        .ok()?
        .next()?
        .ok()?
        .path();
    let session = std::fs::read_dir(project.join("sessions"))
        .ok()?
        .next()?
        .ok()?
        .path();
    Some(session)
}

fn count(events: &[Value], from: &str, kind: &str) -> usize {
    events
        .iter()
        .filter(|e| e["from"] == from && e["kind"] == kind)
        .count()
}

#[test]
fn pass_runs_every_role_once_and_leaves_a_game() {
    let scratch = Scratch::new();
    let run = scratch.run("pass", &[]).expect_code(0);
    let summary = summary(&run);
    assert_eq!(summary["reason"], "verdict_pass");
    assert_eq!(summary["verdict"]["corrected"]["verdict"], "PASS");
    let session = scratch.session();
    let game = session.join("artifacts/game/index.html");
    assert!(game.is_file(), "the mock builder wrote the game");
    assert_eq!(summary["game"], game.display().to_string());
    // Where the time went: every turn by role, the QA run, the process as a whole.
    let timings = &summary["timings_ms"];
    let roles: Vec<&str> = timings["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["planner-lead", "builder", "verifier"],
        "{timings:#}"
    );
    assert!(timings["turns"][0]["ms"].is_u64(), "{timings:#}");
    assert_eq!(timings["qa"].as_array().unwrap().len(), 1, "{timings:#}");
    assert!(timings["qa"][0]["ms"].is_u64(), "{timings:#}");
    assert!(timings["total_ms"].as_u64().unwrap() >= timings["start_ms"].as_u64().unwrap());
    let events = transcript(&session);
    assert_effects_once(&events);
    for role in ["planner-lead", "builder", "verifier"] {
        assert_eq!(count(&events, role, "agent.wake"), 1, "{role} woke once");
        assert_eq!(count(&events, role, "agent.stop"), 1, "{role} stopped once");
        assert!(session.join(format!("prompts/{role}-1.md")).is_file());
        assert!(session.join(format!("logs/{role}-1.log")).is_file());
    }
    assert_eq!(events[0]["kind"], "session.start");
    assert_eq!(events[0]["data"]["bindings"]["builder"]["adapter"], "mock");
    assert!(
        events[0]["data"]["pipeline_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let builder_prompt = std::fs::read_to_string(session.join("prompts/builder-1.md")).unwrap();
    assert!(builder_prompt.contains(PITCH) && builder_prompt.contains("Acceptance criteria"));
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "done");
    // The spec and build name real files with their real hashes.
    let build = of_kind(&events, "build")[0];
    for artifact in build["artifacts"].as_array().unwrap() {
        let bytes = std::fs::read(session.join(artifact["path"].as_str().unwrap())).unwrap();
        let hex = crumb_core::digest::sha256_hex(&bytes);
        assert_eq!(artifact["sha256"], hex);
    }
}

#[test]
fn human_output_names_session_bindings_and_game() {
    let scratch = Scratch::new();
    let run = scratch.run_human().expect_code(0);
    let session = scratch.session();
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let text = run
        .stdout
        .replace(&session.display().to_string(), "<DIR>")
        .replace(&id, "<SESSION>");
    let head: Vec<&str> = text.lines().take(5).collect();
    insta::assert_snapshot!("run_header", head.join("\n"));
    assert!(text.contains("ended    verdict_pass"), "{text}");
    assert!(
        text.contains("\ntime     ") && text.contains(" s (3 turns "),
        "{text}"
    );
    assert!(
        text.contains("game     <DIR>/artifacts/game/index.html"),
        "{text}"
    );
    let hint = "studio   crumb studio → http://127.0.0.1:1/#/session/<SESSION>";
    assert_eq!(
        text.matches(hint).count(),
        2,
        "one line in the header, one in the summary: {text}"
    );
}

/// A stand-in Studio answering `/api/health` with Studio's signature on a free loopback port.
fn fake_studio() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut request = [0u8; 1024];
            let _ = std::io::Read::read(&mut stream, &mut request);
            let body = r#"{"ok":true,"studio_version":"test"}"#;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = std::io::Write::write_all(&mut stream, reply.as_bytes());
        }
    });
    port
}

#[test]
fn a_running_studio_gets_the_session_s_deep_link() {
    let scratch = Scratch::new();
    let port = fake_studio();
    let human = scratch
        .command(&["run"])
        .env("CRUMB_STUDIO_PORT", port.to_string())
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--adapter", "mock"])
        .run()
        .expect_code(0);
    let id = scratch.session_id();
    let line = format!("studio   http://127.0.0.1:{port}/#/session/{id}");
    assert_eq!(human.stdout.matches(&line).count(), 2, "{}", human.stdout);
    assert!(!human.stdout.contains("crumb studio →"));

    let scratch = Scratch::new();
    let json = scratch
        .command(&["run"])
        .env("CRUMB_STUDIO_PORT", port.to_string())
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--adapter", "mock", "--json"])
        .run()
        .expect_code(0);
    let studio = &summary(&json)["studio"];
    assert_eq!(studio["running"], true);
    let id = scratch.session_id();
    assert_eq!(
        studio["url"],
        format!("http://127.0.0.1:{port}/#/session/{id}")
    );
}

/// Start a slowed mock run, SIGKILL its coordinator once `ready` holds, and return the session
/// it left behind (meta still says running, the lock is free).
fn kill_mid_run(scratch: &Scratch, ready: Ready) -> PathBuf {
    let (child, session) = run_until(scratch, ready);
    child.kill();
    session
}

/// Start a `partial` mock run that waits for a person, and return it once it first asks for one.
fn partial_run_awaiting(scratch: &Scratch) -> (Running, PathBuf) {
    let child = scratch.spawn_run("partial", 0, &["--wait"]);
    let home = scratch.home();
    let session = wait_for(
        || any_session(&home),
        |e| of_kind(e, "session.awaiting").len() == 1,
    );
    (child, session)
}

/// Block until `session` has asked for a person `times` times.
fn wait_until_awaiting(session: &Path, times: usize) {
    wait_for(
        || Some(session.to_path_buf()),
        |e| of_kind(e, "session.awaiting").len() == times,
    );
}

/// Wait for a background run to end and check its exit code, showing its output if it differs.
fn expect_exit(child: Running, code: i32) {
    child.wait().expect_code(code);
}

/// Start a slowed mock run in the background and wait until its transcript satisfies `ready`.
fn run_until(scratch: &Scratch, ready: Ready) -> (Running, PathBuf) {
    let child = scratch.spawn_run("pass", 300, &[]);
    let home = scratch.home();
    let session = wait_for(|| any_session(&home), ready);
    (child, session)
}

mod agent_clis;
mod chaos;
mod chaos_faults;
mod disk_full;
mod hostile_files;
mod inputs;
mod lifecycle;
mod limits;
mod live;
mod orphans;
mod outcomes;
mod parallel;
mod qa_infra;
mod refusals;
mod resume;
mod scenarios;
mod storage_faults;
mod story;
mod stream_timing;
mod takeover;
