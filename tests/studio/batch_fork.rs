//! Studio's read-only batch view and its fork route: a batch run by the real `crumb batch` is
//! listed (JSON and page), and a fork started over HTTP from an event of a real session runs to
//! its end, its session JSON naming the parent and the fork point.

use super::*;
use crate::run::Scratch;

#[test]
fn batches_are_listed_and_a_fork_starts_from_an_event_and_names_its_parent() {
    let scratch = Scratch::new();
    let parent_dir = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    let pitches = scratch.dir.path().join("pitches.txt");
    std::fs::write(&pitches, "a tapper\na match-3\n").unwrap();
    scratch
        .command(&["batch"])
        .arg(scratch.pipeline())
        .arg(&pitches)
        .args(["--adapter", "mock", "--json"])
        .run()
        .expect_code(0);
    let server = Server::start(&scratch.home());
    let sessions = server.get_json("/api/sessions");
    let parent = sessions["sessions"]
        .as_array()
        .or_else(|| sessions.as_array())
        .unwrap()
        .iter()
        .find(|s| s["goal"] == "a dodger")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let parent_json = server.get_json(&format!("/api/sessions/{parent}"));
    assert!(parent_json["fork"].is_null(), "not a fork");
    let transcript = parent_dir.join("transcript.jsonl");
    let spec = std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["kind"] == "spec")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = server.post(
        &format!("/api/sessions/{parent}/fork"),
        &json!({ "at": spec, "mock_scenario": "pass" }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let fork: Value = serde_json::from_str(&reply.body).unwrap();
    let fork_id = fork["session_id"].as_str().unwrap();
    assert_ne!(fork_id, parent);
    let state = wait_for_state(&server, fork_id, "the fork passes", |s| {
        s["state"]["done"]["outcome"] == "pass"
    });
    assert_eq!(state["fork"]["parent"], parent.as_str());
    assert_eq!(state["fork"]["at"], spec.as_str());
    let bad = server.post(
        &format!("/api/sessions/{parent}/fork"),
        &json!({ "at": "../etc" }),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    let batches = server.get_json("/api/batches");
    let rows = batches[0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["outcome"] == "pass"), "{batches}");
    let page = server.get("/batches");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("2/2 passed"), "{}", page.body);
}
