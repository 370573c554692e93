//! A session with a 60 MB line: each stream and each events page gets a short summary of it with a
//! link, and the link serves the exact line from the file.

use super::*;

/// Bytes of the large line's body (the line is a little longer).
const BIG_BODY: usize = 60 * 1000 * 1000;
/// A summary carries at most this much of the body (`large_event::HEAD_BYTES`).
const HEAD: usize = 4 * 1024;

/// Append one event line of about 60 MB straight to the transcript (the writer refuses lines
/// over 4 MiB, a file may still hold one): returns its id and its exact text.
fn append_big_line(fixture: &Fixture) -> (String, String) {
    let id = ulid::Ulid::new().to_string();
    let mut body = String::with_capacity(BIG_BODY + 64);
    body.push_str("first words é \\n \\u00e9 ");
    while body.len() < BIG_BODY {
        body.push_str("abcdefghij");
    }
    body.push_str(" needle-at-the-very-end");
    let line = format!(
        r#"{{"id":"{id}","ts":"2026-12-03T12:00:00.000Z","session_id":"{}","from":"builder","kind":"agent.thought_summary","body":"{body}"}}"#,
        fixture.id()
    );
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(fixture.session.dir.transcript())
        .unwrap();
    file.write_all(line.as_bytes()).unwrap();
    file.write_all(b"\n").unwrap();
    (id, line)
}

/// What a summary must say about the big line.
fn assert_summary(summary: &Value, session: &str, id: &str, line: &str) {
    assert_eq!(summary["id"], id);
    assert_eq!(summary["kind"], "agent.thought_summary");
    assert_eq!(summary["from"], "builder");
    assert_eq!(summary["ts"], "2026-12-03T12:00:00.000Z");
    assert_eq!(summary["truncated"], true);
    assert_eq!(summary["bytes"], line.len());
    assert_eq!(
        summary["full"],
        format!("/api/sessions/{session}/events/{id}")
    );
    let head = summary["body"].as_str().expect("a string body");
    assert!(
        head.starts_with("first words é \n é abcdefghij"),
        "{head:.60}"
    );
    assert!(head.len() <= HEAD, "{} bytes of body", head.len());
}

#[test]
fn a_60_mb_line_is_streamed_and_paged_as_a_summary_and_served_whole_by_its_link() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    let before = fixture.note("before");
    let (big, line) = append_big_line(&fixture);
    let after = fixture.note("after");
    let session = fixture.id();
    let server = Server::start(home.path());

    // The stream: the small events whole, the large one as its summary, in file order.
    let mut sse = Sse::open(
        server.addr,
        &format!("/api/sessions/{session}/stream?from=start"),
        None,
    );
    let frames: Vec<Frame> = (0..3).map(|_| sse.next_event()).collect();
    let ids: Vec<&str> = frames.iter().map(|f| f.id.as_deref().unwrap()).collect();
    assert_eq!(ids, [before.id.as_str(), big.as_str(), after.id.as_str()]);
    assert!(
        frames[1].data.len() < 2 * HEAD,
        "{} bytes sent",
        frames[1].data.len()
    );
    assert_summary(
        &serde_json::from_str(&frames[1].data).unwrap(),
        &session,
        &big,
        &line,
    );
    let small: Event = serde_json::from_str(&frames[2].data).expect("a whole event");
    assert_eq!(small.body.as_deref(), Some("after"));

    // The events page, unfiltered and filtered by text found only at the line's very end.
    let page = server.get_json(&format!("/api/sessions/{session}/events?first=true"));
    let events = page["events"].as_array().unwrap();
    assert_eq!(events.len(), 3);
    assert_summary(&events[1]["event"], &session, &big, &line);
    assert_eq!(events[2]["event"]["body"], "after");
    let found = server.get_json(&format!(
        "/api/sessions/{session}/events?q=NEEDLE-AT-THE-VERY-END&first=true"
    ));
    let found = found["events"].as_array().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["seq"], 1);
    assert_summary(&found[0]["event"], &session, &big, &line);

    // The link: the exact line; a small event's link is its exact line too.
    let full = server.get(&format!("/api/sessions/{session}/events/{big}"));
    assert_eq!(full.status, 200);
    assert_eq!(full.header("x-crumb-seq"), Some("1"));
    assert!(full.body == line, "the full event differs from the line");
    let small = server.get(&format!("/api/sessions/{session}/events/{}", after.id));
    assert_eq!(small.status, 200);
    let small: Event = serde_json::from_str(&small.body).unwrap();
    assert_eq!(small.id, after.id);

    // An id the session lacks, well formed or not, is a 404.
    let unknown = ulid::Ulid::new().to_string();
    for id in [unknown.as_str(), "not-an-id"] {
        let reply = server.get(&format!("/api/sessions/{session}/events/{id}"));
        assert_eq!(reply.status, 404, "{id}: {}", reply.body);
    }
}
