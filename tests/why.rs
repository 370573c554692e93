//! `crumb why`: for each mock scenario (and a token cap, a respec cap and a dry run) the cause it
//! names is the engine's own — compared with the state `crumb replay --json` folds and the
//! events the runner wrote, never with a copied string.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::run::Scratch;

/// Run the scratch pipeline (its text changed by `edit`) on the mock with `scenario`.
fn session(scenario: &str, edit: impl Fn(String) -> String, extra: &[&str]) -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(scratch.pipeline()).unwrap();
    std::fs::write(scratch.pipeline(), edit(text)).unwrap();
    let run = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("a dodger")
        .args(["--adapter", "mock", "--json", "--mock-scenario", scenario])
        .args(extra)
        .timeout(Duration::from_secs(120))
        .run();
    let summary: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    let folder = PathBuf::from(summary["folder"].as_str().unwrap());
    (scratch, folder)
}

fn json(scratch: &Scratch, args: &[&str], session: &Path) -> Value {
    let run = scratch.command(args).arg(session).run().expect_code(0);
    serde_json::from_str(&run.stdout).unwrap()
}

/// `(why --json, the replayed state, the transcript)`.
fn explained(scratch: &Scratch, session: &Path) -> (Value, Value, Vec<Value>) {
    let why = json(scratch, &["why", "--json"], session);
    let replay = json(scratch, &["replay", "--json"], session);
    let events = std::fs::read_to_string(session.join("transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (why, replay["state"].clone(), events)
}

/// The ending `why` names is the fold's, and `crumb status` ends with its headline.
fn assert_same_ending(scratch: &Scratch, session: &Path, why: &Value, state: &Value) {
    assert_eq!(why["ended"]["reason"], state["done"]["reason"], "{why:#}");
    assert_eq!(why["ended"]["outcome"], state["done"]["outcome"], "{why:#}");
    assert_eq!(
        why["ended"]["event_id"], state["done"]["event_id"],
        "{why:#}"
    );
    let status = scratch
        .command(&["status"])
        .arg(session)
        .run()
        .expect_code(0);
    let last = status.stdout.lines().last().unwrap_or_default().to_owned();
    assert!(
        last.contains(why["headline"].as_str().unwrap()),
        "{last} / {}",
        why["headline"]
    );
}

fn budget<'a>(why: &'a Value, name: &str) -> &'a Value {
    why["budgets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("no budget {name}: {why:#}"))
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

#[test]
fn pass_names_the_done_route_that_ended_it() {
    let (scratch, session) = session("pass", |t| t, &[]);
    let (why, state, _) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    let reason = state["done"]["reason"].as_str().unwrap();
    let label = why["ended"]["route"]["label"].as_str().unwrap();
    assert!(label.ends_with(&format!("done pass ({reason})")), "{label}");
}

#[test]
fn fail_once_counts_both_verdicts_against_max_verify() {
    let (scratch, session) = session("fail-once", |t| t, &[]);
    let (why, state, events) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    let verify = budget(&why, "max_verify");
    assert_eq!(verify["used"], state["verification"]["count"]);
    assert_eq!(verify["used"], of_kind(&events, "judge.score").len());
    // Every correction the engine made to a verdict is listed with its event.
    let corrected: Vec<&Value> = of_kind(&events, "audit")
        .into_iter()
        .filter(|a| a["data"]["corrections"].is_array())
        .collect();
    assert_eq!(
        why["corrections"].as_array().unwrap().len(),
        corrected.len()
    );
}

#[test]
fn critical_once_counts_the_redesign_against_max_respec() {
    let (scratch, session) = session("critical-once", |t| t, &[]);
    let (why, state, _) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    assert_eq!(
        budget(&why, "max_respec")["used"],
        state["budgets"]["respecs"]
    );
    assert_eq!(budget(&why, "max_respec")["used"], 1);
}

#[test]
fn partial_names_the_wait_and_what_a_person_can_say() {
    let (scratch, session) = session("partial", |t| t, &[]);
    let (why, state, _) = explained(&scratch, &session);
    assert!(why["ended"].is_null());
    assert_eq!(why["waiting"]["on"], state["awaiting"]["on"]);
    assert_eq!(
        why["waiting"]["event_id"],
        state["awaiting"]["judge_event_id"]
    );
    let say: Vec<&str> = why["waiting"]["say"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        say.contains(&"/approve") && say.contains(&"/veto <reason>"),
        "{say:?}"
    );
    // What it says works: the approval the table routes finishes the session.
    scratch
        .command(&["say"])
        .arg(&session)
        .arg("/approve")
        .run()
        .expect_code(0);
    scratch
        .command(&["resume"])
        .arg(&session)
        .timeout(Duration::from_secs(60))
        .run()
        .expect_code(0);
    let (why, state, _) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
}

#[test]
fn crash_always_names_the_open_circuit_each_failed_turn_and_the_swap() {
    let (scratch, session) = session("crash-always", |t| t, &[]);
    let (why, state, events) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    assert!(
        why["ended"]["route"].is_null(),
        "a breaker, not a route: {why:#}"
    );
    let errors = of_kind(&events, "error");
    let turns = why["failed_turns"].as_array().unwrap();
    assert_eq!(turns.len(), errors.len());
    for (turn, error) in turns.iter().zip(&errors) {
        assert_eq!(turn["event_id"], error["id"]);
        assert_eq!(turn["reason"], error["data"]["reason"]);
        assert_eq!(turn["class"], error["data"]["class"]);
    }
    assert_eq!(why["swaps"], state["swaps"]);
}

#[test]
fn hang_once_names_the_idle_timeout_of_the_failed_turn() {
    let (scratch, session) = session("hang-once", |t| t, &["--idle-timeout", "1s"]);
    let (why, state, events) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    let errors = of_kind(&events, "error");
    assert_eq!(
        why["failed_turns"][0]["reason"],
        errors[0]["data"]["reason"]
    );
    assert_eq!(why["failed_turns"][0]["role"], errors[0]["data"]["role"]);
}

#[test]
fn a_token_cap_names_the_budget_it_reached() {
    let (scratch, session) = session(
        "pass",
        |t| {
            t.replace(
                "tokens: { warn: 250000, hard: 300000 }",
                "tokens: { warn: 4000, hard: 5000 }",
            )
        },
        &[],
    );
    let (why, state, _) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    let tokens = budget(&why, "tokens");
    assert_eq!(tokens["used"], state["budgets"]["tokens"]);
    assert!(
        tokens["used"].as_u64() >= tokens["limit"].as_u64(),
        "{tokens}"
    );
    assert_eq!(tokens["limit"], 5000);
}

#[test]
fn a_respec_cap_names_the_budget_it_reached() {
    let (scratch, session) = session(
        "critical-once",
        |t| t.replace("max_respec: 3", "max_respec: 0"),
        &[],
    );
    let (why, state, _) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    let respec = budget(&why, "max_respec");
    assert_eq!(respec["limit"], 0);
    assert_eq!(respec["used"], state["budgets"]["respecs"]);
}

#[test]
fn a_dry_run_says_it_is_the_route_not_a_result() {
    let scratch = Scratch::new();
    let run = scratch
        .command(&["run"])
        .arg(crate::support::repo_root().join("pipelines/casual.yaml"))
        .args([
            "a goal",
            "--new",
            "--dry-run",
            "--json",
            "--script",
            "FAIL,PASS",
        ])
        .run()
        .expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).unwrap();
    let session = PathBuf::from(summary["folder"].as_str().unwrap());
    let (why, state, _) = explained(&scratch, &session);
    assert_same_ending(&scratch, &session, &why, &state);
    assert_eq!(why["dry_run"], true);
    assert!(
        why["headline"].as_str().unwrap().starts_with("DRY RUN: "),
        "{why:#}"
    );
}
