//! Studio driving real `crumb run` processes, and the probe that tells Studio from any other
//! server.

use super::*;

#[test]
fn a_session_started_from_studio_runs_crumb_run_and_a_posted_approve_finishes_it() {
    let home = temp_home();
    let server = Server::start(home.path());
    let reply = server.post(
        "/api/sessions",
        &json!({ "pipeline": "pipelines/casual.yaml", "pitch": "tiny match-3 for studio", "preset": "mock", "mock_scenario": "partial" }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let started: Value = serde_json::from_str(&reply.body).unwrap();
    let id = started["session_id"].as_str().unwrap().to_owned();
    assert_eq!(started["url"], format!("/#/session/{id}"));
    let mut sse = Sse::open(
        server.addr,
        &format!("/api/sessions/{id}/stream?from=start"),
        None,
    );
    let awaiting = wait_for_state(&server, &id, "the PARTIAL verdict", |s| {
        s["state"]["awaiting"].is_object()
    });
    assert_eq!(awaiting["scorecard"]["verdict"], "PARTIAL");
    assert_eq!(
        awaiting["live"], true,
        "crumb run --wait keeps the coordinator"
    );
    let approve = server.post(
        &format!("/api/sessions/{id}/inbox"),
        &json!({ "line": "/approve looks fun" }),
    );
    assert_eq!(approve.status, 202, "{}", approve.body);
    // Everything up to the end arrives on the stream, in order, with the real coordinator's ack.
    let mut seen: Vec<Event> = Vec::new();
    while !seen.iter().any(|e| e.kind == Kind::Done) {
        seen.extend(sse.appends(1).into_iter().map(|(_, e)| e));
    }
    let approve_event = seen
        .iter()
        .find(|e| e.kind == Kind::UserApprove)
        .expect("user.approve");
    let ack = seen
        .iter()
        .find(|e| {
            e.kind == Kind::Ack
                && e.metadata.as_ref().and_then(|m| m.ack_for.as_deref())
                    == Some(approve_event.id.as_str())
        })
        .expect("the coordinator acknowledged the line");
    assert!(
        seen.iter().position(|e| e.id == ack.id)
            > seen.iter().position(|e| e.id == approve_event.id)
    );
    let ids: Vec<&str> = seen.iter().map(|e| e.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(ids, sorted, "in order, no duplicates");
    wait_for_state(&server, &id, "the finished session", |s| {
        s["state"]["done"].is_object()
    });
}

#[test]
fn the_probe_recognises_studio_and_nothing_else() {
    let home = temp_home();
    let server = Server::start(home.path());
    assert!(crumb::studio::probe::running_on(
        server.addr.port(),
        Duration::from_secs(5)
    ));
    // The preview listener is an HTTP server too, but not Studio.
    assert!(!crumb::studio::probe::running_on(
        server.preview.port(),
        Duration::from_secs(5)
    ));
    assert_eq!(
        crumb::studio::probe::session_url(7321, "01JABCDEFGHJKMNPQRSTVWXYZ0"),
        "http://127.0.0.1:7321/#/session/01JABCDEFGHJKMNPQRSTVWXYZ0"
    );
}

/// Stop and Resume from the page's routes: SIGTERM leaves the session resumable, Resume takes it
/// over with `crumb resume`, and a second coordinator is refused.
#[test]
fn stop_then_resume_through_the_routes() {
    let home = temp_home();
    let server = Server::start(home.path());
    let id = start_partial(&server, "stop and resume me");
    wait_for_state(&server, &id, "the live wait for a person", |s| {
        s["state"]["awaiting"].is_object() && s["live"] == true
    });
    let refused = server.post(&format!("/api/sessions/{id}/resume"), &json!({}));
    assert_eq!(
        refused.status, 409,
        "one coordinator per session: {}",
        refused.body
    );
    let stop = server.post(&format!("/api/sessions/{id}/stop"), &json!({}));
    assert_eq!(stop.status, 202, "{}", stop.body);
    let stopped = wait_for_state(&server, &id, "the coordinator gone", |s| s["live"] == false);
    assert_eq!(stopped["outcome"]["kind"], "waiting");
    assert_eq!(
        stopped["outcome"]["resumable"], true,
        "{}",
        stopped["outcome"]
    );
    assert!(
        stopped["outcome"]["action"]
            .as_str()
            .unwrap()
            .contains("Resume")
    );
    let resumed = server.post(&format!("/api/sessions/{id}/resume"), &json!({}));
    assert_eq!(resumed.status, 202, "{}", resumed.body);
    wait_for_state(&server, &id, "the resumed coordinator", |s| {
        s["live"] == true
    });
    let approve = server.post(
        &format!("/api/sessions/{id}/inbox"),
        &json!({ "line": "/approve" }),
    );
    assert_eq!(approve.status, 202, "{}", approve.body);
    let done = wait_for_state(&server, &id, "the approved end", |s| {
        s["state"]["done"].is_object()
    });
    assert_eq!(done["outcome"]["kind"], "passed");
    let ended = server.post(&format!("/api/sessions/{id}/resume"), &json!({}));
    assert_eq!(ended.status, 409);
    let bar = server.post(
        &format!("/api/sessions/{id}/inbox"),
        &json!({ "line": "/note late" }),
    );
    assert_eq!(
        serde_json::from_str::<Value>(&bar.body).unwrap()["ended"],
        true
    );
}
