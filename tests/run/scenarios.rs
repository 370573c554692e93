//! The mock's misbehaviours end to end: repair, redesign, a person's approval, crashes, an open
//! circuit and an idle timeout.

use super::*;

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
    let resumed = scratch.resume(&session);
    assert_eq!(summary(&resumed)["reason"], "approved");
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(of_kind(&events, "user.approve").len(), 1);
    // Resuming a finished session changes nothing and applies no line twice.
    let lines = events.len();
    scratch.resume(&session);
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
    let summary = summary(&scratch.run("crash-always", &[]).expect_code(23));
    assert_eq!(summary["reason"], "circuit_open:builder");
    assert_eq!(summary["outcome"], "stopped");
    // The fixture's builder falls back to `mock`: the swap is reported, never silent.
    assert_eq!(summary["degraded"], true);
    assert_eq!(summary["swaps"][0]["role"], "builder");
    assert_eq!(summary["swaps"][0]["to"], "mock");
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

/// A line with the maximal id (`7ZZZ…`, forged or corrupted) at the end of a waiting session
/// bricks nothing: an agent's `crumb event` and a person's `/approve` (the runner's append) both
/// land after it, and replay folds every line.
#[test]
fn a_maximal_id_at_the_end_of_the_transcript_does_not_stop_approve() {
    let scratch = Scratch::new();
    summary(&scratch.run("partial", &[]).expect_code(10));
    let session = scratch.session();
    let id = session.file_name().unwrap().to_str().unwrap().to_owned();
    let path = session.join("transcript.jsonl");
    let forged = serde_json::json!({
        "id": "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "ts": "2026-05-01T10:00:00.000Z",
        "session_id": id, "from": "system", "kind": "note", "body": "far future",
    });
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}{forged}\n")).unwrap();
    scratch
        .command(&["event"])
        .turn(&session, "builder")
        .stdin(r#"{"kind":"note","body":"still writable"}"#)
        .run()
        .expect_code(0);
    scratch.say(&session, "/approve");
    assert_eq!(summary(&scratch.resume(&session))["reason"], "approved");
    let events = transcript(&session);
    assert_eq!(of_kind(&events, "user.approve").len(), 1);
    let replay: Value = serde_json::from_str(
        &scratch
            .on(&["replay", "--json"], &session)
            .expect_code(0)
            .stdout,
    )
    .unwrap();
    assert_eq!(replay["replay"]["skipped"], 0, "{}", replay["replay"]);
    assert_eq!(replay["replay"]["events"], events.len());
}
