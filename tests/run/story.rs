//! The story line: each mock misbehaviour told round by round by the engine's own fold, the same in
//! `crumb status` (text and `--json`) and the Markdown export — and a run that recovered from a
//! crash reads differently from a clean one. Each story is checked against the transcript's own
//! events (verdicts, failed turns, the end), not against a copy of the words.

use serde_json::Value;

use super::*;

/// `crumb status --json`'s story of the scratch's session, and the session's events.
fn story(scratch: &Scratch) -> (Value, Vec<Value>, String) {
    let session = scratch.session();
    let status = scratch.on(&["status", "--json"], &session).expect_code(0);
    let status: Value = serde_json::from_str(&status.stdout).expect("status JSON");
    let text = scratch.on(&["status"], &session).expect_code(0).stdout;
    (status["story"].clone(), transcript(&session), text)
}

fn steps<'a>(round: &'a Value, step: &str) -> Vec<&'a Value> {
    round["steps"]
        .as_array()
        .map(|steps| steps.iter().filter(|s| s["step"] == step).collect())
        .unwrap_or_default()
}

/// Every round's `Judged` steps, in order, against the transcript's `judge.score` events.
fn assert_verdicts_match(story: &Value, events: &[Value]) {
    let told: Vec<&str> = story["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| steps(r, "judged"))
        .map(|j| j["claimed"].as_str().unwrap_or_default())
        .collect();
    let written: Vec<&str> = of_kind(events, "judge.score")
        .iter()
        .map(|e| e["scores"]["verdict"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        told, written,
        "one judged step per judge.score, claims as written"
    );
}

#[test]
fn a_repair_is_two_rounds_and_a_crash_once_pass_is_not_a_clean_pass() {
    let clean = Scratch::new();
    clean.run("pass", &[]).expect_code(0);
    let (clean_story, events, _) = story(&clean);
    assert_eq!(clean_story["rounds"].as_array().map(Vec::len), Some(1));
    assert_verdicts_match(&clean_story, &events);
    assert!(steps(&clean_story["rounds"][0], "incident").is_empty());
    assert_eq!(clean_story["ended"]["reason"], "verdict_pass");

    let crashed = Scratch::new();
    crashed.run("crash-once", &[]).expect_code(0);
    let (crash_story, events, text) = story(&crashed);
    assert_eq!(crash_story["ended"], clean_story["ended"], "both passed");
    let incidents = steps(&crash_story["rounds"][0], "incident");
    let failed: Vec<&str> = incidents
        .iter()
        .filter(|i| i["what"] == "failed")
        .map(|i| i["role"].as_str().unwrap_or_default())
        .collect();
    let errors: Vec<&str> = of_kind(&events, "error")
        .iter()
        .map(|e| e["data"]["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        failed, errors,
        "one failed step per failed turn the dispatcher recorded"
    );
    assert!(
        incidents.iter().any(|i| i["what"] == "retry"),
        "{crash_story}"
    );
    assert!(text.contains("builder failed: exit_nonzero"), "{text}");
    assert!(text.contains("builder retried"), "{text}");

    let repaired = Scratch::new();
    repaired.run("fail-once", &[]).expect_code(0);
    let (repair_story, events, text) = story(&repaired);
    let rounds = repair_story["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{repair_story}");
    assert_verdicts_match(&repair_story, &events);
    assert_eq!(steps(&rounds[0], "judged")[0]["verdict"], "FAIL");
    assert_eq!(rounds[0]["then"]["roles"], serde_json::json!(["builder"]));
    assert_eq!(rounds[0]["then"]["cause"], "route");
    assert_eq!(steps(&rounds[1], "produced")[0]["kind"], "build");
    // The engine's corrections of the repaired round's claim, with the dimensions they changed.
    let judged = steps(&rounds[1], "judged")[0];
    let audit = of_kind(&events, "audit");
    let audited: Vec<&Value> = audit[0]["data"]["corrections"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let told: Vec<&Value> = judged["corrections"].as_array().unwrap().iter().collect();
    assert_eq!(told, audited, "the guards the audit event names");
    assert!(!judged["changed"].as_array().unwrap().is_empty());
    assert!(
        text.contains("\n  R1 · ") && text.contains("\n  R2 · "),
        "{text}"
    );

    // The Markdown export tells the same rounds, line for line.
    let markdown = repaired
        .on(&["export", "--format", "md"], &repaired.session())
        .expect_code(0)
        .stdout;
    for line in text.lines().filter(|l| l.starts_with("  R")) {
        assert!(
            markdown.contains(&format!("- {}", line.trim())),
            "{line} not in\n{markdown}"
        );
    }
}

#[test]
fn a_redesign_a_wait_and_an_open_circuit_are_told_as_such() {
    let redesign = Scratch::new();
    redesign.run("critical-once", &[]).expect_code(0);
    let (told, _, _) = story(&redesign);
    assert_eq!(
        told["rounds"][0]["then"]["roles"],
        serde_json::json!(["planner-lead"])
    );

    let partial = Scratch::new();
    partial.run("partial", &[]).expect_code(10);
    let (told, _, text) = story(&partial);
    assert_eq!(told["rounds"][0]["then"]["what"], "person");
    assert!(told["ended"].is_null(), "still waiting: {told}");
    assert!(text.contains("then waits for a person (verdict)"), "{text}");

    let broken = Scratch::new();
    broken.run("crash-always", &[]).expect_code(23);
    let (told, _, text) = story(&broken);
    assert_eq!(told["ended"]["reason"], "circuit_open:builder");
    let round = &told["rounds"][0];
    assert!(steps(round, "judged").is_empty(), "never judged");
    assert!(
        steps(round, "incident")
            .iter()
            .filter(|i| i["what"] == "failed")
            .count()
            >= 3
    );
    assert!(
        text.contains("ended STOPPED (circuit_open:builder)"),
        "{text}"
    );
}
