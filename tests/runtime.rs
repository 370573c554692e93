//! Integration tests: runtime — sessions on disk, `crumb ls`, `crumb say`, the inbox, bindings,
//! process spawning and the agent-CLI adapters against fake CLIs.

use std::path::PathBuf;

use crumb::runtime::home::{CrumbHome, Project};
use crumb::runtime::meta::SessionStatus;
use crumb::runtime::session::{self, CreatedSession};

use crate::support::{crumb, repo_root};

/// A scratch crumb home and project directory, both deleted at the end of the test.
struct Sandbox {
    tmp: tempfile::TempDir,
    home: CrumbHome,
    project_dir: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = CrumbHome::at(tmp.path().join("home"));
        let project_dir = tmp.path().join("project");
        std::fs::create_dir_all(&project_dir).unwrap();
        Sandbox {
            tmp,
            home,
            project_dir,
        }
    }

    fn project(&self) -> Project {
        Project::containing(&self.project_dir).unwrap()
    }

    /// A real session of the shipped casual pipeline, created through the library.
    fn session(&self, goal: &str) -> CreatedSession {
        session::create(
            &self.home,
            &self.project(),
            &repo_root().join("pipelines/casual.yaml"),
            goal,
        )
        .unwrap()
    }

    /// `crumb` run from the project directory with this sandbox's home.
    fn crumb(&self) -> crate::support::Crumb {
        crumb()
            .current_dir(&self.project_dir)
            .env("CRUMB_HOME", self.home.root())
    }
}

fn ls_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"[0-9A-HJKMNP-TV-Z]{26}", "[ULID]"),
        (r"\b\d+[smhd]\b", "[age]"),
        (r"\b[0-9a-f]{16}\b", "[project]"),
    ]
}

#[test]
fn new_session_has_the_documented_layout() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("60-second match-3");
    let dir = created.dir.path();
    for file in [
        "transcript.jsonl",
        "meta.json",
        "inbox.txt",
        "coordinator.lock",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    for sub in [
        "artifacts",
        "prompts",
        "logs",
        "qa",
        "pipeline/pipelines",
        "pipeline/templates",
    ] {
        assert!(dir.join(sub).is_dir(), "{sub} missing");
    }
    let frozen = created.dir.frozen_pipeline(&created.meta);
    assert_eq!(frozen, dir.join("pipeline/pipelines/casual.yaml"));
    assert_eq!(
        std::fs::read(&frozen).unwrap(),
        std::fs::read(repo_root().join("pipelines/casual.yaml")).unwrap()
    );
    assert!(
        dir.join("pipeline/templates/_event_protocol.md.j2")
            .is_file(),
        "included partials are frozen too"
    );
    assert_eq!(created.meta.status, SessionStatus::Running);
    assert_eq!(created.meta.pid, Some(std::process::id()));
    assert_eq!(created.meta.roles, ["planner-lead", "builder", "verifier"]);
    assert_eq!(created.meta.pipeline_hash, created.frozen.hash);
    assert_eq!(created.dir.read_meta().unwrap(), created.meta);
    assert!(
        created
            .dir
            .path()
            .starts_with(sandbox.home.sessions_dir(&sandbox.project())),
        "sessions live under $CRUMB_HOME/projects/<id>/sessions"
    );
}

#[test]
fn a_second_coordinator_cannot_lock_a_live_session() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let err = crumb::runtime::lock::CoordinatorLock::acquire(created.dir.path()).unwrap_err();
    assert!(err.to_string().contains("another coordinator"), "{err}");
}

#[test]
fn ls_lists_this_projects_sessions_newest_first() {
    let sandbox = Sandbox::new();
    let older = sandbox.session("60-second match-3 with combo bonus");
    let newer = sandbox.session("a very long pitch that goes on and on about a roguelike deckbuilder with pirates, ninjas and a time loop");
    let run = sandbox.crumb().arg("ls").run().expect_code(0);
    let first_id = run
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(first_id, newer.dir.id());
    assert!(run.stdout.contains(older.dir.id()));
    insta::with_settings!({ filters => ls_filters() }, {
        insta::assert_snapshot!("ls_table", run.stdout);
    });
}

#[test]
fn ls_reports_a_dead_coordinator() {
    let sandbox = Sandbox::new();
    let alive = sandbox.session("alive");
    let dead = sandbox.session("dead");
    let dead_id = dead.dir.id().to_owned();
    drop(dead.lock); // the coordinator died: meta still says running, the lock is free
    let run = sandbox.crumb().args(["ls", "--json"]).run().expect_code(0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
    let status_of = |id: &str| rows.iter().find(|row| row["id"] == id).unwrap()["status"].clone();
    assert_eq!(status_of(alive.dir.id()), "running");
    assert_eq!(status_of(&dead_id), "dead");
    assert_eq!(rows[0]["goal"], "dead");
    assert_eq!(rows[0]["pipeline"], "casual");
}

#[test]
fn ls_scopes_to_the_project_unless_asked_for_all() {
    let sandbox = Sandbox::new();
    sandbox.session("here");
    let elsewhere = sandbox.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run = sandbox
        .crumb()
        .current_dir(&elsewhere)
        .arg("ls")
        .run()
        .expect_code(0);
    assert_eq!(
        run.stdout,
        "no sessions for this project (try --all-projects)\n"
    );
    let run = sandbox
        .crumb()
        .current_dir(&elsewhere)
        .args(["ls", "--all-projects"])
        .run()
        .expect_code(0);
    assert!(run.stdout.contains("here"), "{}", run.stdout);
    assert!(run.stdout.starts_with("PROJECT"));
}

#[test]
fn ls_skips_unreadable_sessions_with_a_warning() {
    let sandbox = Sandbox::new();
    let good = sandbox.session("good");
    let broken = sandbox
        .home
        .sessions_dir(&sandbox.project())
        .join("01JBROKEN0000000000000000");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("meta.json"), "{ not json").unwrap();
    let run = sandbox.crumb().arg("ls").run().expect_code(0);
    assert!(run.stdout.contains(good.dir.id()));
    assert!(run.stderr.contains("skipped"), "{}", run.stderr);
}

#[test]
fn ls_handles_hundreds_of_sessions() {
    let sandbox = Sandbox::new();
    let first = sandbox.session("template");
    let sessions = sandbox.home.sessions_dir(&sandbox.project());
    let meta = std::fs::read_to_string(first.dir.meta_path()).unwrap();
    for n in 0..300 {
        let id = format!("01J{n:023}");
        let dir = sessions.join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), meta.replace(first.dir.id(), &id)).unwrap();
    }
    let run = sandbox.crumb().args(["ls", "--json"]).run().expect_code(0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(rows.len(), 301);
}

#[test]
fn say_appends_valid_lines_by_id_prefix_or_path() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    sandbox
        .crumb()
        .args(["say", &id, "/pause", "@builder"])
        .run()
        .expect_code(0);
    sandbox
        .crumb()
        .args(["say", &id.to_lowercase()[..20], "@builder make it faster"])
        .run()
        .expect_code(0);
    let transcript = created.dir.transcript();
    let run = sandbox
        .crumb()
        .args(["say", transcript.to_str().unwrap(), "/approve"])
        .run()
        .expect_code(0);
    assert_eq!(run.stdout, format!("sent to {id}\n"));
    assert_eq!(run.stderr, "", "a live coordinator holds the lock: no note");
    let inbox = std::fs::read_to_string(created.dir.inbox()).unwrap();
    assert_eq!(
        inbox,
        "/pause @builder\n@builder make it faster\n/approve\n"
    );
}

#[test]
fn say_rejects_bad_lines_with_exit_2_and_appends_nothing() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    let cases = [
        ("/goto researcher", "unknown role `researcher`"),
        ("@buildr hi", "did you mean `@builder`?"),
        ("/swap builder=gpt5", "unknown adapter `gpt5`"),
        ("/frobnicate", "unknown command `/frobnicate`"),
        ("/ask weather", "unknown /ask topic"),
        ("   ", "nothing to say"),
    ];
    for (line, expected) in cases {
        let run = sandbox
            .crumb()
            .args(["say", &id, line])
            .run()
            .expect_code(2);
        assert!(run.stderr.contains(expected), "{line}: {}", run.stderr);
    }
    let run = sandbox
        .crumb()
        .args(["say", &id, "/goto researcher"])
        .run()
        .expect_code(2);
    insta::with_settings!({ filters => ls_filters() }, {
        insta::assert_snapshot!("say_unknown_role", run.stderr);
    });
    assert_eq!(std::fs::read_to_string(created.dir.inbox()).unwrap(), "");
}

#[test]
fn say_resolves_sessions_strictly() {
    let sandbox = Sandbox::new();
    let first = sandbox.session("one");
    let _second = sandbox.session("two");
    let shared: String = first.dir.id().chars().take(3).collect();
    let run = sandbox
        .crumb()
        .args(["say", &shared, "/approve"])
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("matches 2 sessions"), "{}", run.stderr);
    let run = sandbox
        .crumb()
        .args(["say", "01ZZZZ", "/approve"])
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("no session matches"), "{}", run.stderr);
    let run = sandbox
        .crumb()
        .args(["say", "not a session!", "/approve"])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("neither a session id"),
        "{}",
        run.stderr
    );
}

#[test]
fn say_to_a_session_without_coordinator_notes_when_it_applies() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    drop(created.lock);
    let run = sandbox
        .crumb()
        .args(["say", &id, "/approve"])
        .run()
        .expect_code(0);
    assert!(
        run.stderr
            .contains(&format!("applies on `crumb resume {id}`")),
        "{}",
        run.stderr
    );
}

#[test]
fn said_lines_read_back_as_user_events_with_offsets() {
    use crumb::runtime::inbox::{parse_line, read_after, to_draft};
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    for line in ["/veto too dark", "/resume @verifier", "@builder add sound"] {
        sandbox
            .crumb()
            .args(["say", &id, line])
            .run()
            .expect_code(0);
    }
    let lines = read_after(&created.dir.inbox(), 0).unwrap();
    let drafts: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| {
            let command = parse_line(&line.text, &created.meta.roles)
                .unwrap()
                .unwrap();
            serde_json::to_value(to_draft(&command, Some(line.end))).unwrap()
        })
        .collect();
    insta::assert_json_snapshot!("said_lines_as_drafts", drafts);
    // Resuming from the last recorded offset yields nothing new.
    assert!(
        read_after(&created.dir.inbox(), lines[2].end)
            .unwrap()
            .is_empty()
    );
}

mod process {
    //! The process spawner against real `sh` subprocesses.

    use std::ffi::OsString;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use crumb::process::{AgentEnv, Outcome, SpawnReport, SpawnSpec, Stream, run};

    fn spec(dir: &Path, script: &str) -> SpawnSpec {
        SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: dir.to_path_buf(),
            env: Vec::new(),
            env_remove: Vec::new(),
            stdin: None,
            log_path: dir.join("logs/role-1.log"),
            wall_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            kill_grace: Duration::from_millis(200),
            pgid_file: None,
        }
    }

    async fn collect(spec: SpawnSpec) -> (SpawnReport, Vec<(Stream, String)>) {
        let mut lines = Vec::new();
        let report = run(
            spec,
            |stream, line| lines.push((stream, line.to_owned())),
            std::future::pending(),
        )
        .await;
        (report, lines)
    }

    /// A process is gone when /proc has no entry for it or it is a zombie awaiting its reaper.
    fn is_gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    fn read_pid(path: &Path) -> i32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn idle_process_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = spec(
            dir.path(),
            "sleep 300 & echo $! > child.pid; echo started; wait",
        );
        spec.idle_timeout = Duration::from_millis(300);
        let (report, lines) = collect(spec).await;
        assert_eq!(report.outcome, Outcome::IdleTimeout);
        assert_eq!(lines, [(Stream::Stdout, "started".to_owned())]);
        let child = read_pid(&dir.path().join("child.pid"));
        assert!(
            is_gone(child),
            "background child {child} survived the idle kill"
        );
        assert!(is_gone(report.pgid.unwrap()));
        let log = std::fs::read_to_string(dir.path().join("logs/role-1.log")).unwrap();
        assert!(
            log.contains("started\n") && log.contains("killed: idle timeout"),
            "{log}"
        );
    }

    #[tokio::test]
    async fn a_group_that_ignores_sigterm_gets_sigkill() {
        let dir = tempfile::tempdir().unwrap();
        let script =
            "trap '' TERM; sleep 300 & echo $! > child.pid; echo up; while :; do sleep 1; done";
        let mut spec = spec(dir.path(), script);
        spec.idle_timeout = Duration::from_millis(300);
        let (report, _) = collect(spec).await;
        assert_eq!(report.outcome, Outcome::IdleTimeout);
        assert!(is_gone(read_pid(&dir.path().join("child.pid"))));
        assert!(is_gone(report.pgid.unwrap()));
    }

    #[tokio::test]
    async fn chatty_process_hits_the_wall_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = spec(dir.path(), "while :; do echo tick; sleep 0.05; done");
        spec.wall_timeout = Duration::from_millis(400);
        spec.idle_timeout = Duration::from_secs(30);
        let (report, lines) = collect(spec).await;
        assert_eq!(report.outcome, Outcome::WallTimeout);
        assert!(!lines.is_empty() && lines.iter().all(|(_, line)| line == "tick"));
    }

    #[tokio::test]
    async fn cancel_stops_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let (tell, told) = tokio::sync::oneshot::channel::<()>();
        let mut tell = Some(tell);
        let report = run(
            spec(dir.path(), "echo ready; sleep 300"),
            move |_, _| {
                if let Some(tell) = tell.take() {
                    let _ = tell.send(());
                }
            },
            async move {
                let _ = told.await;
            },
        )
        .await;
        assert_eq!(report.outcome, Outcome::Cancelled);
        assert!(is_gone(report.pgid.unwrap()));
    }

    #[tokio::test]
    async fn exit_codes_and_stderr_are_reported_and_logged() {
        let dir = tempfile::tempdir().unwrap();
        let (report, lines) = collect(spec(dir.path(), "echo out; echo oops >&2; exit 3")).await;
        assert_eq!(report.outcome, Outcome::Exited { code: 3 });
        assert!(lines.contains(&(Stream::Stderr, "oops".to_owned())));
        assert!(lines.contains(&(Stream::Stdout, "out".to_owned())));
        assert_eq!((report.stdout_lines, report.stderr_lines), (1, 1));
        let log = std::fs::read_to_string(dir.path().join("logs/role-1.log")).unwrap();
        assert!(
            log.contains("out\n") && log.contains("[stderr] oops\n") && log.contains("=== exit 3,"),
            "{log}"
        );
        let (killed, _) = collect(spec(dir.path(), "kill -9 $$")).await;
        assert_eq!(killed.outcome, Outcome::Exited { code: 137 });
    }

    #[tokio::test]
    async fn missing_binaries_and_directories_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        let mut missing = spec(dir.path(), "");
        missing.program = "/nonexistent/agent-cli".into();
        assert_eq!(
            collect(missing).await.0.outcome,
            Outcome::MissingBinary {
                program: "/nonexistent/agent-cli".into()
            }
        );
        let mut on_path = spec(dir.path(), "");
        on_path.program = "crumb-test-no-such-cli".into();
        assert!(matches!(
            collect(on_path).await.0.outcome,
            Outcome::MissingBinary { .. }
        ));
        let mut no_cwd = spec(dir.path(), "true");
        no_cwd.cwd = dir.path().join("gone");
        assert!(matches!(
            collect(no_cwd).await.0.outcome,
            Outcome::SpawnError { .. }
        ));
        let log = std::fs::read_to_string(dir.path().join("logs/role-1.log")).unwrap();
        assert!(log.contains("not started"), "{log}");
    }

    #[tokio::test]
    async fn a_large_prompt_goes_through_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = (0..20_000).fold(String::new(), |mut prompt, n| {
            use std::fmt::Write;
            let _ = writeln!(prompt, "line {n} of a long prompt");
            prompt
        });
        assert!(prompt.len() > 400_000, "well past the 128 KiB argv limit");
        let mut spec = spec(dir.path(), "wc -l; wc -c < /dev/null");
        spec.stdin = Some(prompt.into_bytes());
        let (report, lines) = collect(spec).await;
        assert!(report.outcome.is_success(), "{report:?}");
        assert_eq!(lines[0].1.trim(), "20000");
    }

    #[tokio::test]
    async fn agent_env_identifies_the_spawn_and_puts_crumb_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let crumb_dir = crate::support::crumb_bin().parent().unwrap().to_path_buf();
        let agent = AgentEnv {
            session_dir: dir.path().to_path_buf(),
            session_id: "01JTESTSESSION0000000000000".into(),
            transcript: dir.path().join("transcript.jsonl"),
            actor: "builder".into(),
            harness: "codex".into(),
            provider: "openai".into(),
            model: Some("gpt-5.5-codex".into()),
            crumb_dir: Some(crumb_dir.clone()),
        };
        let mut spec = spec(
            dir.path(),
            "echo \"$CRUMB_ACTOR $CRUMB_HARNESS $CRUMB_PROVIDER $CRUMB_MODEL $CRUMB_SESSION_ID\"; command -v crumb; echo \"${CLAUDECODE:-unset}\"",
        );
        spec.env = agent.vars(std::env::var_os("PATH").as_ref());
        spec.env.push(("CLAUDECODE".into(), "1".into()));
        spec.env_remove = vec![OsString::from("CLAUDECODE")];
        let (_, lines) = collect(spec.clone()).await;
        let text: Vec<&str> = lines.iter().map(|(_, line)| line.as_str()).collect();
        assert_eq!(
            text[0],
            "builder codex openai gpt-5.5-codex 01JTESTSESSION0000000000000"
        );
        assert_eq!(PathBuf::from(text[1]), crumb_dir.join("crumb"));
        assert_eq!(text[2], "1", "explicit vars are applied after removals");
        spec.env.retain(|(name, _)| name != "CLAUDECODE");
        let (_, lines) = collect(spec).await;
        assert_eq!(lines[2].1, "unset");
    }
}

mod fake_clis {
    //! Each agent-CLI adapter run through the real process spawner against a fake CLI that checks
    //! the headless contract, prints the CLI's documented output and writes back through the real
    //! `crumb event`.

    use std::ffi::OsString;
    use std::time::Duration;

    use crumb::adapters::{
        self, AdapterKind, Terminal, ToolCall, TurnRequest, TurnSummary, Usage, turn_failure,
    };
    use crumb::process::{AgentEnv, Outcome, SpawnSpec, Stream, run};

    use super::Sandbox;
    use crate::support::{crumb_bin, repo_root};

    struct Turn {
        outcome: Outcome,
        summary: TurnSummary,
        tools: Vec<ToolCall>,
        events: Vec<serde_json::Value>,
        log: String,
    }

    /// Run one `role` turn of `kind` against the fake CLIs, with `extra_env` on top.
    async fn turn(kind: AdapterKind, role: &str, extra_env: &[(&str, &str)]) -> Turn {
        let sandbox = Sandbox::new();
        let created = sandbox.session("60-second match-3");
        let dir = created.dir.clone();
        let prompt = format!(
            "You are the {role}. Build the game.\n{}",
            "Context line.\n".repeat(20_000)
        );
        let prompt_file = dir.prompt_path(role, 1);
        std::fs::create_dir_all(prompt_file.parent().unwrap()).unwrap();
        std::fs::write(&prompt_file, &prompt).unwrap();
        let request = TurnRequest {
            prompt,
            prompt_file,
            session_dir: dir.path().to_path_buf(),
            role: role.to_owned(),
            model: None,
            effort: None,
            command: Vec::new(),
        };
        let invocation = adapters::invocation(kind, &request).unwrap();
        let identity = AgentEnv {
            session_dir: dir.path().to_path_buf(),
            session_id: dir.id().to_owned(),
            transcript: dir.transcript(),
            actor: role.to_owned(),
            harness: kind.default_harness().to_owned(),
            provider: kind.default_provider().to_owned(),
            model: None,
            crumb_dir: Some(crumb_bin().parent().unwrap().to_path_buf()),
        };
        // The fake CLIs first on PATH, then crumb's directory, then the system.
        let fakes = repo_root().join("tests/fixtures/fake-clis");
        let mut path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .collect::<Vec<_>>();
        path.insert(0, fakes);
        let system_path = std::env::join_paths(path).unwrap();
        let mut env = identity.vars(Some(&system_path));
        env.extend(invocation.env.clone());
        env.extend(
            extra_env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let spec = SpawnSpec {
            program: invocation.program.clone(),
            args: invocation.args.clone(),
            cwd: dir.path().to_path_buf(),
            env,
            env_remove: invocation.env_remove.clone(),
            stdin: invocation.stdin.clone(),
            log_path: dir.log_path(role, 1),
            wall_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(30),
            kill_grace: Duration::from_millis(200),
            pgid_file: None,
        };
        let mut parser = adapters::parser(kind);
        let mut tools = Vec::new();
        let report = run(
            spec,
            |stream, line| {
                if stream == Stream::Stdout {
                    tools.extend(parser.line(line));
                }
            },
            std::future::pending(),
        )
        .await;
        let events = std::fs::read_to_string(dir.transcript())
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let log = std::fs::read_to_string(dir.log_path(role, 1)).unwrap();
        Turn {
            outcome: report.outcome,
            summary: parser.summary(),
            tools,
            events,
            log,
        }
    }

    fn assert_wrote_back(turn: &Turn, role: &str, cli: &str) {
        assert_eq!(turn.events.len(), 1, "{:?}\n{}", turn.events, turn.log);
        let event = &turn.events[0];
        assert_eq!(event["from"], role, "crumb event stamps the spawned role");
        assert_eq!(event["kind"], "note");
        let body = event["body"].as_str().unwrap();
        assert!(body.starts_with(&format!("{cli} got ")), "{body}");
        assert!(
            body.ends_with(&format!("You are the {role}. Build the game.")),
            "the whole prompt arrived: {body}"
        );
        let bytes: usize = body.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(
            bytes > 200_000,
            "the large prompt arrived whole ({bytes} bytes)"
        );
    }

    #[tokio::test]
    async fn claude_code_turn() {
        let turn = turn(AdapterKind::ClaudeCode, "builder", &[]).await;
        assert_eq!(turn.outcome, Outcome::Exited { code: 0 }, "{}", turn.log);
        assert_eq!(
            turn_failure(AdapterKind::ClaudeCode, &turn.outcome, &turn.summary),
            None
        );
        assert_eq!(
            turn.tools,
            [ToolCall {
                tool: "Bash".into(),
                target: Some("crumb event".into())
            }]
        );
        assert_eq!(
            turn.summary.usage,
            Usage {
                tokens_in: Some(12),
                tokens_out: Some(310),
                cache_read: Some(20480),
                cache_write: Some(1500),
                thinking_tokens: Some(96),
                cost_usd: Some(0.042),
                model: Some("claude-sonnet-4-6".into()),
            }
        );
        assert_eq!(
            turn.summary.adapter_session_id.as_deref(),
            Some("fake-claude-1")
        );
        assert_wrote_back(&turn, "builder", "claude");
    }

    #[tokio::test]
    async fn codex_turn() {
        let turn = turn(AdapterKind::Codex, "verifier", &[]).await;
        assert_eq!(turn.outcome, Outcome::Exited { code: 0 }, "{}", turn.log);
        assert_eq!(
            turn_failure(AdapterKind::Codex, &turn.outcome, &turn.summary),
            None
        );
        assert_eq!(
            turn.tools,
            [ToolCall {
                tool: "command_execution".into(),
                target: Some("bash -lc crumb event".into())
            }]
        );
        assert_eq!(turn.summary.usage.tokens_in, Some(315));
        assert_eq!(turn.summary.usage.cache_read, Some(24448));
        assert_eq!(turn.summary.usage.tokens_out, Some(122));
        assert_eq!(turn.summary.usage.thinking_tokens, Some(64));
        assert!(
            turn.log.contains("[stderr] Reading prompt from stdin..."),
            "{}",
            turn.log
        );
        assert_wrote_back(&turn, "verifier", "codex");
    }

    #[tokio::test]
    async fn gemini_cli_turn() {
        let turn = turn(AdapterKind::GeminiCli, "planner-lead", &[]).await;
        assert_eq!(turn.outcome, Outcome::Exited { code: 0 }, "{}", turn.log);
        assert_eq!(
            turn_failure(AdapterKind::GeminiCli, &turn.outcome, &turn.summary),
            None
        );
        assert_eq!(
            turn.tools,
            [ToolCall {
                tool: "run_shell_command".into(),
                target: Some("crumb event".into())
            }]
        );
        assert_eq!(
            turn.summary.usage,
            Usage {
                tokens_in: Some(800),
                tokens_out: Some(130),
                cache_read: Some(900),
                model: Some("gemini-2.5-pro".into()),
                ..Usage::default()
            }
        );
        assert_wrote_back(&turn, "planner-lead", "gemini");
    }

    #[tokio::test]
    async fn failed_turns_are_failures_whatever_the_exit_code() {
        let claude = turn(
            AdapterKind::ClaudeCode,
            "builder",
            &[("FAKE_CLI_MODE", "error")],
        )
        .await;
        assert_eq!(
            claude.summary.terminal,
            Terminal::Failed {
                message: "fake failure".into()
            }
        );
        assert_eq!(
            turn_failure(AdapterKind::ClaudeCode, &claude.outcome, &claude.summary).as_deref(),
            Some("claude-code exited 1: fake failure")
        );
        let codex = turn(AdapterKind::Codex, "builder", &[("FAKE_CLI_MODE", "error")]).await;
        assert_eq!(
            turn_failure(AdapterKind::Codex, &codex.outcome, &codex.summary).as_deref(),
            Some("codex exited 1: fake failure")
        );
        let gemini = turn(
            AdapterKind::GeminiCli,
            "builder",
            &[("FAKE_CLI_MODE", "error")],
        )
        .await;
        assert_eq!(gemini.outcome, Outcome::Exited { code: 0 });
        assert_eq!(
            turn_failure(AdapterKind::GeminiCli, &gemini.outcome, &gemini.summary).as_deref(),
            Some("gemini-cli reported a failed turn: fake failure")
        );
    }

    #[tokio::test]
    async fn claude_refuses_to_nest_unless_crumb_strips_the_guard() {
        // The fake refuses to start with CLAUDECODE set, like the real CLI (the adapter removes the
        // inherited one: see `process::agent_env_identifies_the_spawn_and_puts_crumb_on_path`).
        let nested = turn(AdapterKind::ClaudeCode, "builder", &[("CLAUDECODE", "1")]).await;
        assert_eq!(nested.outcome, Outcome::Exited { code: 1 });
        assert!(
            nested
                .log
                .contains("cannot be launched inside another Claude Code session"),
            "{}",
            nested.log
        );
        assert_eq!(nested.summary.terminal, Terminal::Missing);
    }
}
