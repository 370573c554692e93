//! Roles run through fake `claude`, `codex` and `gemini` CLIs by the same dispatcher: usage
//! recorded, failures in the CLI's own words, a missing CLI swapped to the fallback.

use super::*;

/// What a fake agent CLI's planner turn must leave in the transcript.
struct CliTurn {
    adapter: &'static str,
    tokens_in: u64,
    tokens_out: u64,
    adapter_session_id: &'static str,
    tool_call: &'static str,
    /// Reasoning tokens the fake reports, recorded as `metadata.thinking_tokens`.
    thinking_tokens: Option<u64>,
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
        stop["metadata"]
            .get("thinking_tokens")
            .and_then(Value::as_u64),
        expected.thinking_tokens
    );
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
        thinking_tokens: Some(96),
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
        thinking_tokens: Some(64),
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
        // gemini reports no reasoning count: it is the total beyond input and output.
        thinking_tokens: Some(72),
    });
}

/// `PATH` with the fake agent CLIs first.
pub(super) fn fake_clis_path() -> String {
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
        .expect_code(i32::from(crumb::exit_codes::FAILED));
    // claude failed and the mock stood in: never a pass (issue 11: it used to say PASS).
    assert_eq!(summary(&run)["reason"], "degraded_to_mock:builder");
    assert_eq!(summary(&run)["degraded"], true);
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
fn a_missing_agent_cli_is_an_error_event_then_the_circuit_swaps_to_the_fallback_and_cannot_pass() {
    let scratch = Scratch::new();
    let run = scratch
        .command(&["run"])
        .env("PATH", "/nonexistent")
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--adapter", "mock", "--bind", "builder=codex", "--json"])
        .run()
        .expect_code(i32::from(crumb::exit_codes::FAILED));
    // The mock's game is a placeholder, not codex's work: the verdict's pass is refused.
    let summary = summary(&run);
    assert_eq!(summary["reason"], "degraded_to_mock:builder");
    assert_eq!(summary["outcome"], "fail");
    assert_eq!(summary["degraded"], true);
    assert_eq!(
        summary["swaps"],
        serde_json::json!([{"role": "builder", "from": "codex", "to": "mock", "cause": "circuit_open"}])
    );
    assert!(
        run.stderr.contains("DEGRADED builder: codex → mock"),
        "the progress says so: {}",
        run.stderr
    );
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

/// A human-output run whose builder is the fake codex failing every turn.
fn run_with_a_failing_codex_builder(scratch: &Scratch) -> crate::support::Run {
    scratch
        .command(&["run", "--adapter", "mock", "--bind", "builder=codex"])
        .env("PATH", fake_clis_path())
        .env("FAKE_CLI_MODE", "error")
        .arg(scratch.pipeline())
        .arg(PITCH)
        .run()
}

#[test]
fn the_summary_quotes_the_failing_cli_with_its_class_and_fix() {
    let scratch = Scratch::new();
    let run = run_with_a_failing_codex_builder(&scratch)
        .expect_code(i32::from(crumb::exit_codes::FAILED));
    let error_line = run
        .stdout
        .lines()
        .find(|line| line.starts_with("error "))
        .unwrap_or_else(|| panic!("no error line in the summary: {}", run.stdout));
    assert!(
        error_line.starts_with("error    builder (model): codex: fake failure"),
        "{error_line}"
    );
    assert!(!error_line.contains("success"), "{error_line}");
    let events = transcript(&scratch.session());
    let errors = of_kind(&events, "error");
    assert_eq!(
        errors.len(),
        3,
        "a model error is retried until the circuit opens"
    );
    assert!(errors.iter().all(|e| e["data"]["class"] == "model"));
    assert!(errors.iter().all(|e| e["data"]["retryable"] == true));
}

#[test]
fn an_effort_the_cli_cannot_take_is_a_note_when_the_turn_starts() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.dir.path().join("presets")).unwrap();
    std::fs::write(
        scratch.dir.path().join("presets/effort.yaml"),
        "name: effort\ndefault: { adapter: mock }\nroles:\n  planner-lead: { adapter: gemini-cli, effort: max }\n",
    )
    .unwrap();
    scratch
        .command(&["run"])
        .env("PATH", fake_clis_path())
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--preset", "effort", "--json"])
        .run()
        .expect_code(0);
    let events = transcript(&scratch.session());
    let notes: Vec<&Value> = of_kind(&events, "note")
        .into_iter()
        .filter(|e| e["from"] == "system")
        .filter(|e| e["body"].as_str().is_some_and(|b| b.contains("effort")))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(
        notes[0]["body"],
        "gemini-cli has no effort setting: effort `max` is ignored"
    );
    assert_eq!(notes[0]["data"]["role"], "planner-lead");
}

#[test]
fn a_preset_s_own_prices_estimate_a_turn_the_cli_did_not_price() {
    let scratch = Scratch::new();
    let preset = scratch.dir.path().join("local.yaml");
    std::fs::write(
        &preset,
        "name: local\n\
         default: { adapter: mock }\n\
         roles:\n  planner-lead: { adapter: codex, model: local-coder }\n\
         prices:\n  local-coder: { input: 2.0, output: 8.0, cache_read: 0.5, cache_write: 0.0, reasoning: 0.0 }\n",
    )
    .unwrap();
    let run = scratch
        .command(&["run"])
        .env("PATH", fake_clis_path())
        .arg(scratch.pipeline())
        .arg(PITCH)
        .arg("--preset")
        .arg(&preset)
        .arg("--json")
        .run()
        .expect_code(0);
    // The fake codex reports 315 fresh input, 24,448 cached and 122 output tokens, and no model.
    let expected = (315.0 * 2.0 + 24_448.0 * 0.5 + 122.0 * 8.0) / 1e6;
    let role = &summary(&run)["usage"]["by_role"]["planner-lead"];
    assert_eq!(role["cost_source"], "estimated", "{role:#}");
    let cost = role["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    let events = transcript(&scratch.session());
    let stop = events
        .iter()
        .find(|e| e["from"] == "planner-lead" && e["kind"] == "agent.stop")
        .unwrap();
    assert_eq!(stop["data"]["price_table"], "preset local");
    // Kept with the session, so a resume or fork prices the same way.
    let start = &of_kind(&events, "session.start")[0];
    assert_eq!(start["data"]["prices"]["preset"], "local");
}
