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
        endpoint: None,
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
    let mut path =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect::<Vec<_>>();
    path.insert(0, fakes);
    let system_path = std::env::join_paths(path).unwrap();
    let mut env = identity.vars(Some(&system_path));
    // The turn's capability, as the dispatcher gives it: `crumb event` writes only with it.
    let capability = crate::support::open_turn(dir.path(), dir.id(), role);
    env.push(("CRUMB_CAPABILITY".into(), capability.token().into()));
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
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["kind"] != "agent.wake")
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
            thinking_tokens: Some(72),
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
