//! The cases: each CLI runs the casual pipeline to PASS against the fake API, and each scripted
//! failure ends (within the run's 60-s process timeout) with the classified error in the CLI's
//! own words.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::fake_api::{FakeApi, Mode};
use super::{Cli, Installed, Project, agents_or_skip};

fn summary(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("no JSON summary ({e}): {stdout}"))
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

fn versions(installed: &Installed) -> String {
    installed
        .versions
        .iter()
        .map(|(name, version)| format!("{name} {version}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The whole casual pipeline on `cli` against the fake API, to PASS.
fn passes(test: &str, cli: Cli, in_slice: bool) {
    let Some(installed) = agents_or_skip(test, in_slice) else {
        return;
    };
    let api = FakeApi::start(Mode::Pass);
    let project = Project::new();
    let started = Instant::now();
    let run = project.run(installed, cli, &api.url()).run();
    eprintln!(
        "{test}: {} in {:.1} s ({})",
        cli.adapter(),
        started.elapsed().as_secs_f64(),
        versions(installed)
    );
    let events = project.events();
    let errors: Vec<String> = of_kind(&events, "error")
        .iter()
        .map(|e| e["body"].to_string())
        .collect();
    assert_eq!(
        run.code,
        0,
        "stderr: {}\nerrors: {errors:#?}\nrequests: {:?}",
        run.stderr,
        api.requests()
    );
    assert_eq!(summary(&run.stdout)["reason"], "verdict_pass");
    // Every role wrote back through the CLI's shell tool and `$CRUMB_BIN`, stamped as that CLI.
    for (role, kind) in [
        ("planner-lead", "spec"),
        ("builder", "build"),
        ("verifier", "judge.score"),
    ] {
        let event = of_kind(&events, kind)
            .into_iter()
            .find(|e| e["from"] == role)
            .unwrap_or_else(|| panic!("no {kind} from {role}"));
        assert_eq!(event["metadata"]["harness"], cli.adapter(), "{event}");
    }
    let stops = of_kind(&events, "agent.stop");
    assert!(
        stops.iter().all(|s| s["data"]["outcome"] == "ok"),
        "{stops:#?}"
    );
    assert!(
        stops
            .iter()
            .all(|s| s["metadata"]["tokens_out"].as_u64() > Some(0)),
        "usage recorded from the CLI's own stream: {stops:#?}"
    );
    assert!(!of_kind(&events, "tool.call").is_empty());
    // Every role has a cost, in `run --json` and in `crumb status --json`: claude's as reported,
    // codex's and gemini's estimated from the shipped price table.
    let usage = &summary(&run.stdout)["usage"];
    let status = project.status_json();
    for role in ["planner-lead", "builder", "verifier"] {
        let row = &usage["by_role"][role];
        assert!(row["cost_usd"].as_f64() > Some(0.0), "{role}: {usage:#}");
        let source = if cli == Cli::Claude {
            "reported"
        } else {
            "estimated"
        };
        assert_eq!(row["cost_source"], source, "{role}: {usage:#}");
        assert_eq!(
            status["usage"]["by_role"][role]["cost_usd"], row["cost_usd"],
            "{role}: {status:#}"
        );
    }
    if cli != Cli::Claude {
        assert!(
            stops.iter().all(|s| s["data"]["price_table"].is_string()),
            "{stops:#?}"
        );
    }
    assert!(usage["total"]["cost_usd"].as_f64() > Some(0.0), "{usage:#}");
}

/// `cli` against `mode` (or against nothing at all when `mode` is `None`): the planner's turn
/// fails with `class`, in the CLI's words, and the run stops with the reason `stopped`.
fn fails(test: &str, cli: Cli, mode: Option<Mode>, class: &str, words: &[&str], in_slice: bool) {
    let Some(installed) = agents_or_skip(test, in_slice) else {
        return;
    };
    let api = mode.map(FakeApi::start);
    let url = if let Some(api) = &api {
        api.url()
    } else {
        // A port nothing listens on: the model API is unreachable.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}")
    };
    let project = Project::new();
    let started = Instant::now();
    let run = project
        .run(installed, cli, &url)
        // The bound of the issue: each failure case ends within 60 s.
        .timeout(Duration::from_secs(60))
        .run();
    eprintln!(
        "{test}: {} ended in {:.1} s ({})",
        cli.adapter(),
        started.elapsed().as_secs_f64(),
        versions(installed)
    );
    let summary = summary(&run.stdout);
    let events = project.events();
    let errors = of_kind(&events, "error");
    assert!(!errors.is_empty(), "{}", run.stderr);
    eprintln!("{test}: {}", errors[0]["body"]);
    for error in &errors {
        assert_eq!(error["data"]["class"], class, "{error:#}");
        let message = error["data"]["message"].as_str().unwrap();
        assert!(
            words
                .iter()
                .any(|w| message.to_lowercase().contains(&w.to_lowercase())),
            "the CLI's own words {words:?} in {message:?}"
        );
        assert!(!message.contains("success"), "{message}");
        assert!(!message.contains("by signal"), "{message}");
    }
    let retryable = matches!(class, "quota" | "model");
    if retryable {
        assert_eq!(summary["reason"], "circuit_open:planner-lead", "{summary}");
    } else {
        assert_eq!(
            errors.len(),
            1,
            "a {class} failure is never retried: {errors:#?}"
        );
        assert_eq!(summary["reason"], format!("agent_{class}:planner-lead"));
        assert!(errors[0]["data"]["hint"].as_str().is_some());
    }
    assert_eq!(run.code, 23, "{}", run.stderr);
    assert_eq!(summary["agent_error"]["class"], class, "{summary}");
}

#[test]
fn claude_runs_the_casual_pipeline_to_pass() {
    passes("claude_runs_the_casual_pipeline_to_pass", Cli::Claude, true);
}

#[test]
fn claude_with_a_rejected_key_stops_on_auth() {
    fails(
        "claude_with_a_rejected_key_stops_on_auth",
        Cli::Claude,
        Some(Mode::Status(401)),
        "auth",
        &["Invalid API key", "authentication_failed", "401"],
        true,
    );
}

#[test]
fn claude_rate_limited_is_quota() {
    fails(
        "claude_rate_limited_is_quota",
        Cli::Claude,
        Some(Mode::Status(429)),
        "quota",
        &["rate_limit", "429"],
        false,
    );
}

#[test]
fn claude_without_network_is_network() {
    fails(
        "claude_without_network_is_network",
        Cli::Claude,
        None,
        "network",
        &["did not answer"],
        false,
    );
}

#[test]
fn claude_input_too_large_is_not_retried() {
    fails(
        "claude_input_too_large_is_not_retried",
        Cli::Claude,
        Some(Mode::InputTooLarge),
        "input_too_large",
        &["prompt is too long"],
        false,
    );
}

#[test]
fn codex_runs_the_casual_pipeline_to_pass() {
    passes("codex_runs_the_casual_pipeline_to_pass", Cli::Codex, false);
}

#[test]
fn codex_with_a_rejected_key_stops_on_auth() {
    fails(
        "codex_with_a_rejected_key_stops_on_auth",
        Cli::Codex,
        Some(Mode::Status(401)),
        "auth",
        &["401", "Unauthorized", "Incorrect API key"],
        false,
    );
}

#[test]
fn codex_without_network_is_network() {
    fails(
        "codex_without_network_is_network",
        Cli::Codex,
        None,
        "network",
        &["network", "error sending request", "Connection", "stream"],
        false,
    );
}

#[test]
fn codex_input_too_large_is_not_retried() {
    fails(
        "codex_input_too_large_is_not_retried",
        Cli::Codex,
        Some(Mode::InputTooLarge),
        "input_too_large",
        &["context window"],
        false,
    );
}

#[test]
fn codex_over_quota_is_quota() {
    fails(
        "codex_over_quota_is_quota",
        Cli::Codex,
        Some(Mode::Status(429)),
        "quota",
        &["quota", "429"],
        false,
    );
}

#[test]
fn gemini_runs_the_casual_pipeline_to_pass() {
    passes(
        "gemini_runs_the_casual_pipeline_to_pass",
        Cli::Gemini,
        false,
    );
}

#[test]
fn gemini_with_a_rejected_key_stops_on_auth() {
    fails(
        "gemini_with_a_rejected_key_stops_on_auth",
        Cli::Gemini,
        Some(Mode::Status(401)),
        "auth",
        &["API key not valid", "401"],
        false,
    );
}

#[test]
fn gemini_without_network_is_network() {
    fails(
        "gemini_without_network_is_network",
        Cli::Gemini,
        None,
        "network",
        &["fetch failed", "ECONNREFUSED", "network", "connect"],
        false,
    );
}

#[test]
fn claude_logged_out_is_stopped_before_the_first_spawn_with_the_fix() {
    let test = "claude_logged_out_is_stopped_before_the_first_spawn_with_the_fix";
    let Some(installed) = agents_or_skip(test, false) else {
        return;
    };
    let project = Project::new();
    let started = Instant::now();
    // No preset and no key: the real `claude auth status` answers for the user's login.
    let run = project
        .run(installed, Cli::Claude, "http://127.0.0.1:1")
        .args(["--adapter", "claude-code"])
        .timeout(Duration::from_secs(60))
        .run();
    eprintln!(
        "{test}: ended in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        run.stderr.trim()
    );
    assert_eq!(
        run.code,
        i32::from(crumb::exit_codes::USAGE_ERROR),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("which is not logged in"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("\"loggedIn\": false"),
        "its own words: {}",
        run.stderr
    );
    assert!(run.stderr.contains("claude auth login"), "{}", run.stderr);
}

#[test]
fn gemini_rate_limited_is_quota() {
    fails(
        "gemini_rate_limited_is_quota",
        Cli::Gemini,
        Some(Mode::Status(429)),
        "quota",
        &["quota", "429"],
        false,
    );
}

/// The real `claude` as an MCP host: the fake model calls crumb's `run` tool and then `status`
/// on the session it started (through `--mcp-config`); the calls reach `crumb mcp`, the session
/// runs, and `status` answers with its state.
#[test]
fn claude_drives_crumb_through_its_mcp_server() {
    let test = "claude_drives_crumb_through_its_mcp_server";
    let Some(installed) = agents_or_skip(test, true) else {
        return;
    };
    let api = FakeApi::start(Mode::CrumbMcp);
    let project = Project::new();
    let crumb_home = project.dir.path().join("crumb-home");
    let config = project.dir.path().join("mcp.json");
    let server = serde_json::json!({"mcpServers": {"crumb": {
        "command": crate::support::crumb_bin(),
        "args": ["mcp", "--project", project.dir.path(), "--home", &crumb_home],
    }}});
    std::fs::write(&config, server.to_string()).expect("mcp config");
    let command = crate::support::Crumb::shell(
        r#""$CLAUDE" -p "Start a snake game session and tell me its status." --output-format json --mcp-config "$MCP_CONFIG" --strict-mcp-config --allowedTools mcp__crumb__run mcp__crumb__status --model local-model"#,
    )
    .current_dir(project.dir.path())
    .env("CLAUDE", installed.bin.join("claude"))
    .env("MCP_CONFIG", &config)
    .env("ANTHROPIC_BASE_URL", api.url())
    .env("ANTHROPIC_API_KEY", "fake-key-for-a-local-api")
    .env("CRUMB_STUDIO_PORT", "1")
    .timeout(Duration::from_secs(180));
    let run = super::setup::isolate(command, Cli::Claude, &project.home())
        .env("ANTHROPIC_API_KEY", "fake-key-for-a-local-api")
        .env("ANTHROPIC_BASE_URL", api.url())
        .run();
    assert_eq!(
        run.code,
        0,
        "{}\n{}\n{:?}",
        run.stdout,
        run.stderr,
        api.requests()
    );
    assert!(
        crumb_home.join("projects").is_dir(),
        "no session was started:\n{}\n{}\n{:?}",
        run.stdout,
        run.stderr,
        api.requests()
    );
    let events = crate::support::eventually(
        "the session MCP started to end",
        Duration::from_secs(60),
        || {
            let (_, events) = crate::support::only_session(&crumb_home);
            events
                .iter()
                .any(|e| e["kind"] == "session.end")
                .then_some(events)
        },
    );
    assert_eq!(events[0]["kind"], "session.start", "{events:?}");
    // Three model turns: the `run` call, the `status` call, the answer; nothing was refused.
    let result: Value = serde_json::from_str(run.stdout.trim()).expect("claude's JSON result");
    assert_eq!(result["num_turns"], 3, "{result}");
    assert_eq!(
        result["permission_denials"],
        serde_json::json!([]),
        "{result}"
    );
    assert_eq!(result["result"], "Done.", "{result}");
}
