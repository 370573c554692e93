//! Studio's versions: the list, a release from a row's event, a version as a zip, a round's
//! "what changed", any round's tree on the preview origin, and `crumb why`'s first line in the
//! banner's outcome.

use super::*;

fn lines(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session.join("transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_round_is_released_downloaded_compared_and_previewed() {
    let scratch = crate::run::Scratch::new();
    let session = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    let id = session.file_name().unwrap().to_str().unwrap().to_owned();
    let events = lines(&session);
    let builds: Vec<&Value> = events.iter().filter(|e| e["kind"] == "build").collect();
    let first = builds[0]["id"].as_str().unwrap();
    let second = builds[1]["id"].as_str().unwrap();
    let server = Server::start(&scratch.home());

    let listed = server.get_json(&format!("/api/sessions/{id}/versions"));
    assert_eq!(listed["versions"], json!([]));
    let refused = request(
        server.addr,
        "POST",
        &format!("/api/sessions/{id}/release"),
        &[("Content-Type", "application/json")],
        Some(&json!({ "at": first }).to_string()),
    );
    assert_eq!(
        refused.status, 403,
        "a write needs the token: {}",
        refused.body
    );
    let released = server.post(
        &format!("/api/sessions/{id}/release"),
        &json!({ "at": first, "name": "first-round" }),
    );
    assert_eq!(released.status, 201, "{}", released.body);
    let listed = server.get_json(&format!("/api/sessions/{id}/versions"));
    assert_eq!(listed["versions"][0]["name"], "first-round");
    assert_eq!(listed["versions"][0]["at"], first);

    let zip = server.get(&format!("/api/sessions/{id}/versions/first-round/zip"));
    assert_eq!(zip.status, 200);
    assert_eq!(zip.header("content-type"), Some("application/zip"));
    assert!(zip.body.starts_with("PK\u{3}\u{4}"), "a zip archive");
    assert!(
        zip.body.contains("first-round/game/index.html"),
        "its files by path"
    );

    let changed = server.get_json(&format!("/api/sessions/{id}/diff?b={second}"));
    assert_eq!(changed["a"], first, "since the previous files");
    let paths: Vec<&str> = changed["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(!paths.is_empty(), "the repair changed something: {changed}");

    // The first round's game, from the store, though the repair rewrote artifacts/.
    let artifact = builds[0]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == "artifacts/game/index.html")
        .unwrap();
    let page = server.preview_get(&id, &format!("/@round/{first}/game/index.html"));
    assert_eq!(page.status, 200);
    assert_eq!(
        crumb_core::digest::sha256_hex(page.body.as_bytes()),
        artifact["sha256"].as_str().unwrap()
    );
    assert_eq!(
        server
            .preview_get(&id, &format!("/@round/{first}/not-there.js"))
            .status,
        404
    );

    let view = server.get_json(&format!("/api/sessions/{id}"));
    let why = crumb()
        .args(["why", "--json"])
        .arg(&session)
        .env("CRUMB_HOME", scratch.home())
        .run()
        .expect_code(0);
    let why: Value = serde_json::from_str(&why.stdout).unwrap();
    assert_eq!(view["outcome"]["why"], why["headline"]);
}
