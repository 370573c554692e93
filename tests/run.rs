//! `crumb run` and `crumb resume` end to end: the real binary, the mock agent as real child
//! processes, a scratch project and a scratch `CRUMB_HOME`. Every transcript written here is
//! checked line by line against `schemas/transcript.schema.json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Run, Running, crumb, eventually, repo_root};

const PITCH: &str = "60-second match-3 with combo bonus";

/// A scratch project holding the static-QA variant of the casual pipeline, and a crumb home.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
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

    fn pipeline(&self) -> PathBuf {
        self.dir.path().join("pipelines/casual-static.yaml")
    }

    fn home(&self) -> PathBuf {
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

    fn command(&self, args: &[&str]) -> crate::support::Crumb {
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

    fn say(&self, session: &Path, line: &str) {
        self.command(&["say"])
            .arg(session)
            .arg(line)
            .run()
            .expect_code(0);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
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
    let run = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--adapter", "mock"])
        .run()
        .expect_code(0);
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
    let id = scratch
        .session()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
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
    let id = scratch
        .session()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        studio["url"],
        format!("http://127.0.0.1:{port}/#/session/{id}")
    );
}

#[test]
fn fail_once_repairs_the_build_then_passes() {
    let scratch = Scratch::new();
    let summary = summary(&scratch.run("fail-once", &[]).expect_code(0));
    assert_eq!(summary["reason"], "verdict_pass");
    let session = scratch.session();
    let events = transcript(&session);
    assert_effects_once(&events);
    let verdicts: Vec<_> = of_kind(&events, "judge.score")
        .iter()
        .map(|e| e["scores"]["verdict"].clone())
        .collect();
    assert_eq!(verdicts, ["FAIL", "PASS"]);
    assert_eq!(count(&events, "builder", "build"), 2, "one repair build");
    assert_eq!(count(&events, "planner-lead", "spec"), 1, "no redesign");
    let repair_prompt = std::fs::read_to_string(session.join("prompts/builder-2.md")).unwrap();
    assert!(
        repair_prompt.contains("combo bonus is not signposted"),
        "the repair gets the verifier's feedback"
    );
}

#[test]
fn critical_once_sends_the_planner_back_to_redesign() {
    let scratch = Scratch::new();
    summary(&scratch.run("critical-once", &[]).expect_code(0));
    let session = scratch.session();
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(count(&events, "planner-lead", "spec"), 2, "a redesign");
    assert_eq!(count(&events, "builder", "build"), 2);
    let redesign = std::fs::read_to_string(session.join("prompts/planner-lead-2.md")).unwrap();
    assert!(
        redesign.contains("does not describe the mechanic"),
        "the planner gets the feedback"
    );
}

#[test]
fn partial_waits_for_a_person_then_approve_and_resume_finish_it() {
    let scratch = Scratch::new();
    let first = summary(&scratch.run("partial", &[]).expect_code(10));
    assert_eq!(first["status"], "awaiting");
    let session = scratch.session();
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "awaiting");
    assert_eq!(of_kind(&transcript(&session), "session.awaiting").len(), 1);
    assert!(
        of_kind(&transcript(&session), "done").is_empty(),
        "waiting is not an ending"
    );

    scratch.say(&session, "/approve");
    let resumed = scratch
        .command(&["resume", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    assert_eq!(summary(&resumed)["reason"], "approved");
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(of_kind(&events, "user.approve").len(), 1);
    // Resuming a finished session changes nothing and applies no line twice.
    let lines = events.len();
    scratch
        .command(&["resume", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    assert_eq!(transcript(&session).len(), lines);
}

#[test]
fn crash_once_is_retried() {
    let scratch = Scratch::new();
    summary(&scratch.run("crash-once", &[]).expect_code(0));
    let events = transcript(&scratch.session());
    assert_effects_once(&events);
    let errors = of_kind(&events, "error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["data"]["reason"], "exit_nonzero");
    assert_eq!(errors[0]["data"]["role"], "builder");
}

#[test]
fn a_builder_that_always_crashes_opens_the_circuit_swaps_then_stops() {
    let scratch = Scratch::new();
    let summary = summary(&scratch.run("crash-always", &[]).expect_code(20));
    assert_eq!(summary["reason"], "circuit_open:builder");
    let events = transcript(&scratch.session());
    assert_effects_once(&events);
    let swaps: Vec<_> = of_kind(&events, "audit")
        .into_iter()
        .filter(|e| e["data"]["event"] == "adapter_swapped")
        .collect();
    assert_eq!(swaps.len(), 1, "one swap before stopping");
    assert_eq!(
        of_kind(&events, "error").len(),
        6,
        "three failures before the swap, three after"
    );
    assert_eq!(count(&events, "verifier", "agent.wake"), 0);
}

#[test]
fn a_hanging_builder_is_killed_at_its_idle_timeout_with_its_children() {
    let scratch = Scratch::new();
    summary(
        &scratch
            .run("hang-once", &["--idle-timeout", "1s"])
            .expect_code(0),
    );
    let session = scratch.session();
    let events = transcript(&session);
    assert_effects_once(&events);
    let errors = of_kind(&events, "error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["data"]["reason"], "idle_timeout");
    let log = std::fs::read_to_string(session.join("logs/builder-1.log")).unwrap();
    let pid: u32 = log
        .split("hanging with child pid ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("the hanging builder logged its child: {log}"));
    // The child was SIGKILLed with its group; once reaped it is gone (or at most a zombie).
    eventually(
        &format!("the hanging builder's child {pid} to be gone"),
        Duration::from_secs(10),
        || {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
            let alive = state
                .as_deref()
                .is_some_and(|s| s.contains("(sleep)") && !s.contains(") Z "));
            (!alive).then_some(())
        },
    );
}

#[test]
fn kill_and_resume_completes_without_losing_or_repeating_anything() {
    // Kill points: mid-planner, mid-builder, after the build (QA / verifier), mid-verifier.
    let points: [(&str, Ready); 4] = [
        ("planner running", |e| {
            count(e, "planner-lead", "agent.wake") == 1
        }),
        ("builder running", |e| {
            count(e, "builder", "agent.wake") == 1
        }),
        ("build written", |e| count(e, "builder", "build") == 1),
        ("verifier running", |e| {
            count(e, "verifier", "agent.wake") == 1
        }),
    ];
    for (name, ready) in points {
        let scratch = Scratch::new();
        let session = kill_mid_run(&scratch, ready);
        let resumed = scratch
            .command(&["resume", "--json"])
            .env("CRUMB_MOCK_DELAY_MS", "50")
            .arg(&session)
            .run();
        assert_eq!(
            resumed.code, 0,
            "resume after a kill at `{name}`:\n{}\n{}",
            resumed.stdout, resumed.stderr
        );
        assert_eq!(
            summary(&resumed)["reason"],
            "verdict_pass",
            "kill at `{name}`"
        );
        let events = transcript(&session);
        assert_effects_once(&events);
        for (from, kind) in [
            ("planner-lead", "spec"),
            ("builder", "build"),
            ("system", "qa.result"),
            ("verifier", "judge.score"),
        ] {
            assert_eq!(
                count(&events, from, kind),
                1,
                "kill at `{name}`: exactly one {kind}"
            );
        }
        for role in ["planner-lead", "builder", "verifier"] {
            assert_eq!(
                count(&events, role, "agent.stop"),
                1,
                "kill at `{name}`: {role} stopped once"
            );
        }
    }
}

#[test]
fn veto_and_approve_sent_to_a_live_waiting_session_each_apply_once() {
    let scratch = Scratch::new();
    let (child, session) = partial_run_awaiting(&scratch);
    scratch.say(&session, "/veto the difficulty never ramps up");
    wait_until_awaiting(&session, 2);
    scratch.say(&session, "/approve");
    expect_exit(child, 0);
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(of_kind(&events, "user.veto").len(), 1);
    assert_eq!(of_kind(&events, "user.approve").len(), 1);
    assert_eq!(
        of_kind(&events, "ack").len(),
        2,
        "each line acknowledged once"
    );
    assert_eq!(
        count(&events, "builder", "build"),
        2,
        "the veto repaired the build once"
    );
    let repair = std::fs::read_to_string(session.join("prompts/builder-2.md")).unwrap();
    assert!(repair.contains("the difficulty never ramps up"));
}

#[test]
fn pause_and_resume_mid_run_hold_and_release_the_next_spawn_once() {
    let scratch = Scratch::new();
    let (child, session) = run_until(&scratch, |e| count(e, "builder", "agent.wake") == 1);
    scratch.say(&session, "/pause");
    let held = |e: &[Value]| {
        of_kind(e, "hook")
            .iter()
            .any(|h| h["data"]["hook"] == "queued")
    };
    wait_for(|| Some(session.clone()), held);
    assert_eq!(
        count(&transcript(&session), "verifier", "agent.wake"),
        0,
        "held while paused"
    );
    scratch.say(&session, "/resume");
    expect_exit(child, 0);
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(of_kind(&events, "user.pause").len(), 1);
    assert_eq!(of_kind(&events, "user.resume").len(), 1);
    assert_eq!(of_kind(&events, "ack").len(), 2);
    assert_eq!(
        count(&events, "verifier", "agent.wake"),
        1,
        "released exactly once"
    );
}

#[test]
fn direct_messages_and_goto_each_spawn_their_role_once() {
    let scratch = Scratch::new();
    let (child, session) = partial_run_awaiting(&scratch);
    scratch.say(&session, "@builder make the gems bigger");
    wait_until_awaiting(&session, 2);
    scratch.say(&session, "/goto planner-lead start over with a dodger");
    wait_until_awaiting(&session, 3);
    // `crumb say` refuses an unknown role itself; a line written straight into the inbox (as any
    // other writer could) must still be answered, with an error ack.
    {
        use std::io::Write;
        let mut inbox = std::fs::OpenOptions::new()
            .append(true)
            .open(session.join("inbox.txt"))
            .unwrap();
        inbox.write_all(b"@nobody hello\n").unwrap();
    }
    wait_for(|| Some(session.clone()), |e| of_kind(e, "ack").len() == 3);
    scratch.say(&session, "/approve");
    expect_exit(child, 0);
    let events = transcript(&session);
    assert_effects_once(&events);
    let builder_two = std::fs::read_to_string(session.join("prompts/builder-2.md")).unwrap();
    assert!(builder_two.contains("make the gems bigger"));
    let planner_two = std::fs::read_to_string(session.join("prompts/planner-lead-2.md")).unwrap();
    assert!(planner_two.contains("start over with a dodger"));
    let acks = of_kind(&events, "ack");
    assert!(
        acks.iter()
            .any(|a| a["data"]["ok"] == false && a["body"].as_str().unwrap().contains("nobody")),
        "unknown role answered with an error ack"
    );
    assert_eq!(
        of_kind(&events, "user.intervene").len(),
        2,
        "the bad line became an ack, not an event"
    );
}

#[test]
fn invalid_pipelines_unknown_adapters_and_bad_binds_exit_2_before_anything_runs() {
    let scratch = Scratch::new();
    let broken = scratch.dir.path().join("pipelines/broken.yaml");
    std::fs::write(
        &broken,
        "version: 1\nname: broken\nroles: {}\nroutes: [[[\n",
    )
    .unwrap();
    let run = scratch
        .command(&["run"])
        .arg(&broken)
        .arg(PITCH)
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("not a valid pipeline"),
        "{}",
        run.stderr
    );
    // Each bad option, and what the usage error must say about it ("" = only the exit code).
    for (option, says) in [
        (["--adapter", "gpt"], "unknown adapter `gpt`"),
        (["--bind", "ghost=mock"], "unknown role `ghost`"),
        (["--preset", "../etc"], ""),
        (["--mock-scenario", "explode"], ""),
    ] {
        let run = scratch
            .command(&["run"])
            .arg(scratch.pipeline())
            .arg(PITCH)
            .args(option)
            .run()
            .expect_code(2);
        assert!(run.stderr.contains(says), "{option:?}: {}", run.stderr);
    }
    assert!(
        !scratch.home().join("projects").exists(),
        "no session was created"
    );
}

#[test]
fn resume_refuses_unknown_sessions_and_a_live_coordinator() {
    let scratch = Scratch::new();
    scratch
        .command(&["resume", "01ZZZZZZZZZZZZZZZZZZZZZZZZ"])
        .run()
        .expect_code(2);
    let (child, session) = partial_run_awaiting(&scratch);
    let second = scratch
        .command(&["resume"])
        .arg(&session)
        .run()
        .expect_code(2);
    assert!(
        second.stderr.contains("already driven"),
        "{}",
        second.stderr
    );
    child.kill();
}

/// What a fake agent CLI's planner turn must leave in the transcript.
struct CliTurn {
    adapter: &'static str,
    tokens_in: u64,
    tokens_out: u64,
    adapter_session_id: &'static str,
    tool_call: &'static str,
}

/// A whole `crumb run` with the planner bound to a fake agent CLI: it reads its prompt, writes its
/// spec back through the real `crumb event`, and the dispatcher's tap records its usage and tools.
fn planner_runs_through_an_agent_cli(expected: &CliTurn) -> Vec<serde_json::Value> {
    let scratch = Scratch::new();
    let binding = format!("planner-lead={}", expected.adapter);
    let run = scratch
        .command(&["run"])
        .env("PATH", fake_clis_path())
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--adapter", "mock", "--bind", &binding, "--json"])
        .run()
        .expect_code(0);
    assert_eq!(summary(&run)["reason"], "verdict_pass", "{}", run.stderr);
    let session = scratch.session();
    let events = transcript(&session);
    assert_effects_once(&events);
    let start = &events[0]["data"]["bindings"]["planner-lead"];
    assert_eq!(start["adapter"], expected.adapter);
    assert_eq!(start["decided_by"], "--bind");
    let spec = of_kind(&events, "spec")[0];
    assert_eq!(spec["from"], "planner-lead");
    assert_eq!(
        spec["metadata"]["harness"], expected.adapter,
        "crumb event stamps the binding"
    );
    let stop = events
        .iter()
        .find(|e| e["from"] == "planner-lead" && e["kind"] == "agent.stop")
        .unwrap();
    assert_eq!(stop["metadata"]["tokens_in"], expected.tokens_in);
    assert_eq!(stop["metadata"]["tokens_out"], expected.tokens_out);
    assert_eq!(
        stop["metadata"]["adapter_session_id"],
        expected.adapter_session_id
    );
    let prompt = std::fs::read_to_string(session.join("prompts/planner-lead-1.md")).unwrap();
    assert!(prompt.contains(PITCH));
    let tool_calls = of_kind(&events, "tool.call");
    assert_eq!(tool_calls.len(), 1, "one tool call in the fake's stream");
    assert_eq!(tool_calls[0]["from"], "planner-lead");
    assert_eq!(tool_calls[0]["body"], expected.tool_call);
    assert_eq!(tool_calls[0]["metadata"]["visibility"], "private");
    assert_eq!(
        tool_calls[0]["metadata"]["tool"],
        format!("{}-stream@v1", expected.adapter)
    );
    events
}

#[test]
fn a_claude_code_role_runs_through_the_same_dispatcher_with_its_usage_recorded() {
    let events = planner_runs_through_an_agent_cli(&CliTurn {
        adapter: "claude-code",
        tokens_in: 12,
        tokens_out: 310,
        adapter_session_id: "fake-claude-1",
        tool_call: "Bash crumb event",
    });
    let stop = events
        .iter()
        .find(|e| e["from"] == "planner-lead" && e["kind"] == "agent.stop")
        .unwrap();
    assert_eq!(stop["metadata"]["cost_usd"], 0.042);
}

#[test]
fn a_codex_role_runs_through_the_same_dispatcher_with_its_usage_recorded() {
    planner_runs_through_an_agent_cli(&CliTurn {
        adapter: "codex",
        tokens_in: 315,
        tokens_out: 122,
        adapter_session_id: "fake-thread-1",
        tool_call: "command_execution bash -lc crumb event",
    });
}

#[test]
fn a_gemini_cli_role_runs_through_the_same_dispatcher_with_its_usage_recorded() {
    planner_runs_through_an_agent_cli(&CliTurn {
        adapter: "gemini-cli",
        tokens_in: 800,
        tokens_out: 130,
        adapter_session_id: "fake-gemini-1",
        tool_call: "run_shell_command crumb event",
    });
}

/// `PATH` with the fake agent CLIs first.
fn fake_clis_path() -> String {
    format!(
        "{}:{}",
        repo_root().join("tests/fixtures/fake-clis").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn an_agent_cli_failure_is_reported_in_the_cli_s_own_words() {
    let scratch = Scratch::new();
    let run = scratch
        .command(&["run"])
        .env("PATH", fake_clis_path())
        .env("FAKE_CLI_MODE", "error")
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args([
            "--adapter",
            "mock",
            "--bind",
            "builder=claude-code",
            "--json",
        ])
        .run()
        .expect_code(0);
    assert_eq!(summary(&run)["reason"], "verdict_pass");
    let events = transcript(&scratch.session());
    assert_effects_once(&events);
    let errors = of_kind(&events, "error");
    assert_eq!(errors.len(), 3, "three failed turns open the circuit");
    for error in &errors {
        assert_eq!(error["data"]["reason"], "exit_nonzero");
        let message = error["data"]["message"].as_str().unwrap();
        assert!(message.contains("fake failure"), "{message}");
    }
    let tool_calls = of_kind(&events, "tool.call");
    assert_eq!(tool_calls.len(), 3, "one per failed turn");
    assert!(tool_calls.iter().all(|e| e["from"] == "builder"));
}

#[test]
fn a_missing_agent_cli_is_an_error_event_then_the_circuit_swaps_to_the_fallback() {
    let scratch = Scratch::new();
    let run = scratch
        .command(&["run"])
        .env("PATH", "/nonexistent")
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--adapter", "mock", "--bind", "builder=codex", "--json"])
        .run()
        .expect_code(0);
    assert_eq!(summary(&run)["reason"], "verdict_pass");
    let events = transcript(&scratch.session());
    assert_effects_once(&events);
    let errors = of_kind(&events, "error");
    assert_eq!(errors.len(), 3, "three failed spawns open the circuit");
    assert!(
        errors
            .iter()
            .all(|e| e["data"]["reason"] == "missing_binary"),
        "{errors:?}"
    );
    // The builder's declared fallback is `mock`: the circuit swaps to it once, and it builds.
    let swap = of_kind(&events, "audit")
        .into_iter()
        .find(|e| e["data"]["event"] == "adapter_swapped")
        .unwrap();
    assert_eq!(swap["data"]["new_adapter"], "mock");
    let last_wake = events
        .iter()
        .rev()
        .find(|e| e["from"] == "builder" && e["kind"] == "agent.wake")
        .unwrap();
    assert_eq!(last_wake["data"]["adapter"], "mock");
}

#[test]
fn resume_skips_a_torn_or_garbage_transcript_line_and_still_finishes() {
    let scratch = Scratch::new();
    scratch.run("partial", &[]).expect_code(10);
    let session = scratch.session();
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(session.join("transcript.jsonl"))
            .unwrap();
        file.write_all(b"{\"id\": garbage \xff\xfe\n{\"half\": ")
            .unwrap();
    }
    scratch.say(&session, "/approve");
    let resumed = scratch
        .command(&["resume", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    assert_eq!(summary(&resumed)["reason"], "approved");
    assert!(
        resumed.stderr.contains("unreadable transcript line"),
        "the skipped lines are reported: {}",
        resumed.stderr
    );
    let text = std::fs::read(session.join("transcript.jsonl")).unwrap();
    let readable: Vec<Value> = text
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    assert_eq!(of_kind(&readable, "done").len(), 1);
    assert_eq!(readable.last().unwrap()["kind"], "session.end");
}

#[test]
fn a_session_without_its_header_cannot_be_resumed_and_says_why() {
    let scratch = Scratch::new();
    scratch.run("partial", &[]).expect_code(10);
    let session = scratch.session();
    std::fs::write(session.join("transcript.jsonl"), b"").unwrap();
    let resumed = scratch
        .command(&["resume"])
        .arg(&session)
        .run()
        .expect_code(1);
    assert!(
        resumed.stderr.contains("session.start"),
        "{}",
        resumed.stderr
    );
}

#[test]
fn ctrl_c_stops_the_live_turn_without_recording_it_and_resume_redoes_it() {
    use nix::sys::signal::Signal;
    let scratch = Scratch::new();
    let (child, session) = run_until(&scratch, |e| count(e, "builder", "agent.wake") == 1);
    child.signal(Signal::SIGINT);
    expect_exit(child, 130);
    let events = transcript(&session);
    assert_eq!(
        count(&events, "builder", "agent.stop"),
        0,
        "the cut-short turn has no outcome"
    );
    assert!(
        of_kind(&events, "done").is_empty(),
        "an interruption is not an ending"
    );
    assert!(
        !session.join("logs/builder-1.pgid").exists(),
        "the builder's process group was stopped and unregistered"
    );
    let resumed = scratch
        .command(&["resume", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(count(&events, "builder", "build"), 1);
    assert_eq!(count(&events, "builder", "agent.stop"), 1);
}

#[test]
fn run_resumes_a_dead_coordinator_s_session_of_the_same_pipeline_and_pitch() {
    let scratch = Scratch::new();
    let session = kill_mid_run(&scratch, |e| count(e, "builder", "agent.wake") == 1);
    let sessions_dir = session.parent().unwrap().to_path_buf();
    let sessions = || std::fs::read_dir(&sessions_dir).unwrap().count();

    // Another pitch is another job: a fresh session, the dead one left alone.
    let other = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("a different pitch")
        .args(["--adapter", "mock", "--json"])
        .run()
        .expect_code(0);
    assert!(!other.stderr.contains("resuming"), "{}", other.stderr);
    assert_eq!(sessions(), 2);

    let resumed = scratch.run("pass", &[]).expect_code(0);
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        resumed.stderr.contains(&format!("resuming session {id}")),
        "one line says so: {}",
        resumed.stderr
    );
    assert_eq!(summary(&resumed)["session_id"], id.as_str());
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    assert_eq!(sessions(), 2, "no new session");
    let events = transcript(&session);
    assert_effects_once(&events);
    for (from, kind) in [("builder", "build"), ("verifier", "judge.score")] {
        assert_eq!(count(&events, from, kind), 1, "exactly one {kind}");
    }

    // Done now: the next run of the same pitch starts afresh, and so does `--new`.
    let again = scratch.run("pass", &[]).expect_code(0);
    assert_ne!(summary(&again)["session_id"], id.as_str());
    assert_eq!(sessions(), 3);
}

#[test]
fn run_new_starts_fresh_even_when_a_dead_session_matches() {
    let scratch = Scratch::new();
    let session = kill_mid_run(&scratch, |e| count(e, "planner-lead", "agent.wake") == 1);
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let fresh = scratch.run("pass", &["--new"]).expect_code(0);
    assert!(!fresh.stderr.contains("resuming"), "{}", fresh.stderr);
    assert_ne!(summary(&fresh)["session_id"], id.as_str());
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
