//! The event streams: live order, reconnecting with `Last-Event-ID`, paging through the index, and
//! new sessions announced.

use super::*;

#[test]
fn live_events_arrive_in_order() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    let first = fixture.note("one");
    let server = Server::start(home.path());
    let mut sse = Sse::open(
        server.addr,
        &format!("/api/sessions/{}/stream?from=start", fixture.id()),
        None,
    );
    let got = sse.appends(1);
    assert_eq!(got[0].0, first.id);
    let written: Vec<Event> = (0..20)
        .map(|i| fixture.note(&format!("note {i}")))
        .collect();
    let got = sse.appends(20);
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    let expected: Vec<&str> = written.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, expected);
    assert!(got.iter().all(|(id, event)| *id == event.id));
}

#[test]
fn reconnect_with_last_event_id_gets_exactly_the_missed_events() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    let events: Vec<Event> = (0..10).map(|i| fixture.note(&format!("n{i}"))).collect();
    let server = Server::start(home.path());
    let mut sse = Sse::open(
        server.addr,
        &format!("/api/sessions/{}/stream", fixture.id()),
        Some(&events[3].id),
    );
    let got = sse.appends(6);
    let ids: Vec<String> = got.into_iter().map(|(id, _)| id).collect();
    let expected: Vec<String> = events[4..].iter().map(|e| e.id.clone()).collect();
    assert_eq!(ids, expected);
    // The next event after them is the sentinel written now: nothing was repeated in between.
    let sentinel = fixture.note("sentinel");
    assert_eq!(sse.appends(1)[0].0, sentinel.id);
    // An idle stream stays alive with heartbeats.
    sse.heartbeat();
    // A client that saw everything gets nothing old, only what comes next.
    let mut caught_up = Sse::open(
        server.addr,
        &format!("/api/sessions/{}/stream", fixture.id()),
        Some(&sentinel.id),
    );
    let after = fixture.note("after");
    assert_eq!(caught_up.appends(1)[0].0, after.id);
}

#[test]
fn events_are_paged_and_filtered_through_the_index() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([3.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    for i in 0..250 {
        fixture.note(&format!("thinking {i}"));
    }
    // A torn last line is skipped, never fatal.
    std::fs::OpenOptions::new()
        .append(true)
        .open(fixture.session.dir.transcript())
        .unwrap()
        .write_all(b"{\"id\":\"01J")
        .unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let last = server.get_json(&format!("/api/sessions/{id}/events?limit=50"));
    assert_eq!(last["total"], 255);
    let events = last["events"].as_array().unwrap();
    assert_eq!(events.len(), 50);
    assert_eq!(events[49]["seq"], 254);
    assert_eq!(events[49]["event"]["body"], "thinking 249");
    let judge = server.get_json(&format!(
        "/api/sessions/{id}/events?kind=judge.score,qa.result"
    ));
    let kinds: Vec<&str> = judge["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["qa.result", "judge.score"]);
    let text = server.get_json(&format!(
        "/api/sessions/{id}/events?q=THINKING%2012&after=0&limit=5"
    ));
    let bodies: Vec<&str> = text["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"]["body"].as_str().unwrap())
        .collect();
    assert_eq!(
        bodies,
        [
            "thinking 12",
            "thinking 120",
            "thinking 121",
            "thinking 122",
            "thinking 123"
        ]
    );
    let before = server.get_json(&format!(
        "/api/sessions/{id}/events?before=3&role=planner-lead"
    ));
    assert_eq!(before["events"].as_array().unwrap().len(), 1);
}

#[test]
fn the_sessions_stream_announces_new_sessions() {
    let home = temp_home();
    let first = Fixture::new(home.path());
    let server = Server::start(home.path());
    let mut sse = Sse::open(server.addr, "/api/stream", None);
    // `ready`: the existing sessions are the baseline; what comes next is announced.
    let ready = sse.next_event();
    assert_eq!(ready.event.as_deref(), Some("ready"));
    assert_eq!(ready.data, "1");
    let mut second = Fixture::new(home.path());
    second.note("hello");
    let frame = loop {
        let frame = sse.next_event();
        if frame.event.as_deref() == Some("session") {
            break frame;
        }
    };
    let row: Value = serde_json::from_str(&frame.data).unwrap();
    assert_eq!(row["id"], second.id().as_str());
    assert_ne!(row["id"], first.id().as_str());
    assert!(row.get("history").is_none(), "rows are summaries");
}
