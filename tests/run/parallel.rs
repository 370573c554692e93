//! Parallel roles end to end: `pipelines/cross-verify.yaml` on its scripted example agents, two
//! judges spawned together and joined. A `crumb run` killed (SIGKILL) while both judges are mid-
//! turn resumes exactly: each branch's spawn is redone under its own effect id, nothing else is
//! repeated, and the session ends as an uninterrupted one does.

use std::path::Path;

use serde_json::Value;

use super::{Scratch, any_session, assert_effects_once, count, summary, transcript, wait_for};
use crate::support::repo_root;

const TOPIC: &str = "why sourdough needs time";

/// The `hook` events named `name`.
fn hooks<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["kind"] == "hook" && e["data"]["hook"] == name)
        .collect()
}

/// Effect ids of `role`'s `agent.wake` events, in order.
fn wakes(events: &[Value], role: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["from"] == role && e["kind"] == "agent.wake")
        .map(|e| {
            e["metadata"]["effect_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// Both judges scored, one join passed the draft, and the writer wrote once.
fn assert_joined_pass(events: &[Value]) {
    assert_effects_once(events);
    assert_eq!(count(events, "writer", "build"), 1);
    for judge in ["judge-a", "judge-b"] {
        assert_eq!(
            count(events, judge, "judge.score"),
            1,
            "{judge} scored once"
        );
    }
    assert_eq!(hooks(events, "fan_out").len(), 1);
    let joins = hooks(events, "join");
    assert_eq!(joins.len(), 1, "one join");
    assert_eq!(joins[0]["data"]["verdict"], "PASS");
    assert_eq!(
        joins[0]["data"]["branches"].as_array().map(Vec::len),
        Some(2)
    );
}

fn run(scratch: &Scratch, hold: &Path) -> crate::support::Crumb {
    scratch
        .command(&["run"])
        .env("CRUMB_EXAMPLE_HOLD", hold)
        .arg(repo_root().join("pipelines/cross-verify.yaml"))
        .arg(TOPIC)
        .arg("--json")
}

#[test]
fn two_judges_score_in_parallel_and_their_join_decides() {
    let scratch = Scratch::new();
    let gate = scratch.home().with_file_name("gate");
    std::fs::write(&gate, "open").unwrap();
    let finished = run(&scratch, &gate).run().expect_code(0);
    let finished = summary(&finished);
    assert_eq!(finished["reason"], "verdict_pass");
    // The summary shows the verdict the routes acted on (the join's), and each branch's.
    let verdict = &finished["verdict"];
    assert_eq!(verdict["joined"], true, "{verdict}");
    assert_eq!(verdict["combine"], "all_pass");
    assert_eq!(verdict["corrected"]["verdict"], "PASS");
    let branches: Vec<&str> = verdict["branches"]
        .as_array()
        .expect("branches")
        .iter()
        .map(|b| b["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(branches.len(), 2);
    assert!(branches.contains(&"judge-a") && branches.contains(&"judge-b"));
    let session = scratch.session();
    let events = transcript(&session);
    assert_joined_pass(&events);
    // `crumb status --json` draws the pipeline's declared dimensions next to the scores.
    let status = scratch.on(&["status", "--json"], &session).expect_code(0);
    let status: Value = serde_json::from_str(&status.stdout).expect("status JSON");
    let rubric: Vec<(&str, &str, f64)> = status["rubric"]
        .as_array()
        .expect("rubric")
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap_or_default(),
                d["source"].as_str().unwrap_or_default(),
                d["weight"].as_f64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        rubric,
        [
            ("D1", "judge", 2.0),
            ("D2", "qa", 1.0),
            ("D3", "judge", 2.0)
        ]
    );
    assert_eq!(
        status["state"]["verification"]["routed_join"]["verdict"],
        "PASS"
    );
    let text = scratch.on(&["status"], &session).expect_code(0).stdout;
    assert!(text.contains("  joined     PASS × "), "{text}");
    assert_eq!(
        status["state"]["verification"]["latest"]["corrected"]["dimensions"],
        serde_json::json!([5.0, 5.0, 4.0])
    );
    // Spawned by the same event: the two branches' effect ids differ only in their index.
    let (a, b) = (wakes(&events, "judge-a"), wakes(&events, "judge-b"));
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_ne!(a[0], b[0]);
    assert_eq!(
        a[0].rsplit_once(':').map(|p| p.0),
        b[0].rsplit_once(':').map(|p| p.0)
    );
}

#[test]
fn a_run_killed_while_both_judges_run_resumes_each_branch_exactly() {
    let scratch = Scratch::new();
    // The judges wait for this file, which never appears: both stay mid-turn until the kill, and
    // the orphans resume stops can never score. The resumed judges run without the gate.
    let gate = scratch.home().with_file_name("gate");
    let child = run(&scratch, &gate).spawn();
    let home = scratch.home();
    let session = wait_for(
        || any_session(&home),
        |e| count(e, "judge-a", "agent.wake") == 1 && count(e, "judge-b", "agent.wake") == 1,
    );
    child.kill();
    let before = transcript(&session);
    assert_eq!(count(&before, "judge-a", "judge.score"), 0);
    assert_eq!(count(&before, "judge-b", "judge.score"), 0);
    assert!(hooks(&before, "join").is_empty());

    let resumed = scratch.resume(&session);
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    let events = transcript(&session);
    assert_joined_pass(&events);
    // Each branch was redone under its own effect id, and only the branches were.
    for judge in ["judge-a", "judge-b"] {
        let ids = wakes(&events, judge);
        assert_eq!(ids.len(), 2, "{judge}: woken before the kill and on resume");
        assert_eq!(ids[0], ids[1], "{judge}: the same effect, redone");
    }
    assert_ne!(wakes(&events, "judge-a")[0], wakes(&events, "judge-b")[0]);
    assert_eq!(
        wakes(&events, "writer").len(),
        1,
        "the writer's finished turn is not redone"
    );
    assert_eq!(count(&events, "system", "qa.result"), 1, "QA is not rerun");
}
