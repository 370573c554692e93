//! An agent CLI's stream as it happens: a tool call is recorded when the stream shows it, not when
//! the turn ends, and a turn whose result arrived is let end on its own when the session finishes
//! (gemini exits about 3 s after its `result` line) instead of being recorded as cancelled.

use super::agent_clis::fake_clis_path;
use super::*;

fn position(events: &[Value], found: impl Fn(&Value) -> bool) -> usize {
    events
        .iter()
        .position(found)
        .unwrap_or_else(|| panic!("no such event in {events:#?}"))
}

#[test]
fn a_tool_call_is_recorded_while_the_turn_runs_before_what_the_tool_produced() {
    let scratch = Scratch::new();
    scratch
        .command(&["run"])
        .env("PATH", fake_clis_path())
        // The fake waits for crumb to have recorded its tool call before it runs the tool.
        .env("FAKE_CLI_AWAIT_TOOL_CALL", "1")
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args([
            "--adapter",
            "mock",
            "--bind",
            "planner-lead=gemini-cli",
            "--json",
        ])
        .run()
        .expect_code(0);
    // Had the call been recorded only at the turn's end, the fake would have given up waiting
    // and written its spec first.
    let events = transcript(&scratch.session());
    let call = position(&events, |e| {
        e["kind"] == "tool.call" && e["from"] == "planner-lead"
    });
    let spec = position(&events, |e| e["kind"] == "spec");
    let stop = position(&events, |e| {
        e["kind"] == "agent.stop" && e["from"] == "planner-lead"
    });
    assert!(
        call < spec && spec < stop,
        "tool.call #{call}, spec #{spec}, agent.stop #{stop}"
    );
}

#[test]
fn the_last_turn_whose_result_arrived_ends_on_its_own_and_is_never_cancelled() {
    let scratch = Scratch::new();
    let run = scratch
        .command(&["run"])
        .env("PATH", fake_clis_path())
        // The verifier's verdict ends the session; its CLI then stays 5 s (past the 3 s grace).
        .env("FAKE_CLI_AS_MOCK", "1")
        .env("FAKE_CLI_LINGER", "5")
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args([
            "--adapter",
            "mock",
            "--bind",
            "verifier=gemini-cli",
            "--json",
        ])
        .timeout(Duration::from_secs(120))
        .run()
        .expect_code(0);
    assert_eq!(summary(&run)["outcome"], "pass", "{}", run.stderr);
    let events = transcript(&scratch.session());
    let stops: Vec<&Value> = of_kind(&events, "agent.stop")
        .into_iter()
        .filter(|e| e["from"] == "verifier")
        .collect();
    let last = stops.last().expect("the verifier's agent.stop");
    assert_eq!(last["data"]["outcome"], "ok", "{last:#}");
    assert_eq!(last["data"]["exit_code"], 0, "{last:#}");
    let done = position(&events, |e| e["kind"] == "done");
    let stop = position(&events, |e| {
        e["kind"] == "agent.stop" && e["from"] == "verifier"
    });
    assert!(stop < done, "the turn ended before the session did");
}
