//! What Studio refuses: paths out of the session, writes without the token, the origin or JSON, a
//! public bind without the flag; and the page's token and CSP.

use super::*;

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: every way out, each checked on both origins"
)]
fn artifact_paths_cannot_leave_the_session() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let dir = fixture.dir().to_path_buf();
    std::fs::create_dir_all(dir.join("artifacts-x")).unwrap();
    std::fs::write(dir.join("artifacts-x/s.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(dir.join("meta.json"), dir.join("artifacts/meta-link.json"))
        .unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("artifacts/etc")).unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let ok = server.get(&format!(
        "/api/sessions/{id}/files/artifacts/game/index.html"
    ));
    assert_eq!(ok.status, 200);
    assert!(ok.body.contains("<canvas"));
    assert_eq!(
        ok.header("content-type"),
        Some("text/plain; charset=utf-8"),
        "HTML is served inert on the API origin"
    );
    for path in [
        "artifacts/../meta.json",
        "artifacts/..%2fmeta.json",
        "artifacts/%2e%2e/meta.json",
        "artifacts/..%2fartifacts-x%2fs.txt",
        "artifacts/%2e%2e%2fartifacts-x%2fs.txt",
        "artifacts/meta-link.json",
        "artifacts/etc/passwd",
        "artifacts//etc/passwd",
        "meta.json",
        "artifacts-x/s.txt",
    ] {
        let reply = server.get(&format!("/api/sessions/{id}/files/{path}"));
        assert!(
            matches!(reply.status, 403 | 404),
            "{path} answered {} {}",
            reply.status,
            reply.body
        );
        assert!(
            !reply.body.contains("secret") && !reply.body.contains("root:"),
            "{path} leaked"
        );
        let preview =
            server.preview_get(&id, &format!("/{}", path.trim_start_matches("artifacts/")));
        assert!(
            matches!(preview.status, 403 | 404),
            "preview {path} answered {}",
            preview.status
        );
    }
    let game = server.preview_get(&id, "/game/index.html");
    assert_eq!(game.status, 200);
    assert_eq!(
        game.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = game.header("content-security-policy").unwrap();
    assert!(
        csp.contains("connect-src 'self'")
            && csp.contains(&format!(
                "frame-ancestors http://127.0.0.1:{}",
                server.addr.port()
            ))
            && !csp.contains("[::1]"),
        "an IPv6 literal is not a source expression Chromium accepts: {csp}"
    );
    // The preview origin has no API, and answers only on a session's own origin.
    let api = server.preview_get(&id, &format!("/api/sessions/{id}"));
    assert_eq!(api.status, 404);
    let bare = request(server.preview, "GET", "/game/index.html", &[], None);
    assert_eq!(bare.status, 421, "no session, no files");
    // Per-role prompts and logs, by spawn number; role names cannot walk out either.
    std::fs::write(
        fixture.session.dir.prompt_path("builder", 1),
        "# Build the game",
    )
    .unwrap();
    std::fs::write(
        fixture.session.dir.log_path("builder", 1),
        "wrote game/index.html",
    )
    .unwrap();
    let roles = server.get_json(&format!("/api/sessions/{id}/roles"));
    let builder = roles["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == "builder")
        .unwrap();
    assert_eq!(builder["prompts"], json!([1]));
    assert_eq!(builder["logs"], json!([1]));
    assert_eq!(
        server
            .get(&format!("/api/sessions/{id}/logs/builder/1"))
            .body,
        "wrote game/index.html"
    );
    assert_eq!(
        server
            .get(&format!("/api/sessions/{id}/prompts/builder/1"))
            .body,
        "# Build the game"
    );
    for path in [
        "logs/..%2f..%2fmeta.json/1",
        "logs/builder/..%2f1",
        "prompts/builder/2",
        "logs/%2e%2e/1",
    ] {
        let reply = server.get(&format!("/api/sessions/{id}/{path}"));
        assert!(
            matches!(reply.status, 400 | 404),
            "{path} answered {}",
            reply.status
        );
    }
    let list = server.get_json(&format!("/api/sessions/{id}/artifacts"));
    let paths: Vec<&str> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["artifacts/game/index.html"],
        "symlinks are not listed"
    );
}

/// A hard link in `artifacts/` to a file outside the session is neither listed nor served, on
/// the API origin or the preview.
#[test]
fn a_hard_link_to_a_file_outside_is_not_served() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let dir = fixture.dir().to_path_buf();
    let outside = home.path().join("secret.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::fs::hard_link(&outside, dir.join("artifacts/game/leak.txt")).unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let reply = server.get(&format!("/api/sessions/{id}/files/artifacts/game/leak.txt"));
    assert_eq!(reply.status, 403, "{}", reply.body);
    let preview = server.preview_get(&id, "/game/leak.txt");
    assert_eq!(preview.status, 403);
    assert!(!reply.body.contains("secret") && !preview.body.contains("secret"));
    let list = server.get_json(&format!("/api/sessions/{id}/artifacts"));
    assert!(
        !list.to_string().contains("leak.txt"),
        "a hard link is not listed: {list}"
    );
}

/// A refused write: what it lacks, its headers, the expected status.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16);

#[test]
fn writes_need_the_token_the_origin_and_json() {
    let home = temp_home();
    let fixture = Fixture::new(home.path());
    let server = Server::start(home.path());
    let path = format!("/api/sessions/{}/inbox", fixture.id());
    let body = json!({ "line": "/approve" }).to_string();
    let origin = format!("http://{}", server.addr);
    let cases: [Case<'_>; 5] = [
        (
            "no token",
            vec![
                ("Origin", origin.as_str()),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "wrong token",
            vec![
                ("X-Crumb-Token", "guess"),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "other origin",
            vec![
                ("X-Crumb-Token", TOKEN),
                ("Origin", "http://127.0.0.1:1"),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "cross-site fetch",
            vec![
                ("X-Crumb-Token", TOKEN),
                ("Sec-Fetch-Site", "cross-site"),
                ("Content-Type", "application/json"),
            ],
            403,
        ),
        (
            "form post",
            vec![("X-Crumb-Token", TOKEN), ("Content-Type", "text/plain")],
            415,
        ),
    ];
    for (what, headers, status) in cases {
        let reply = request(server.addr, "POST", &path, &headers, Some(&body));
        assert_eq!(reply.status, status, "{what}: {}", reply.body);
    }
    // DNS rebinding: a foreign Host is refused even for reads.
    let rebound = request(
        server.addr,
        "GET",
        "/api/sessions",
        &[("Host", "attacker.example:80")],
        None,
    );
    assert_eq!(rebound.status, 421);
    let huge = json!({ "line": "x".repeat(100_000) }).to_string();
    let reply = request(
        server.addr,
        "POST",
        &path,
        &[
            ("X-Crumb-Token", TOKEN),
            ("Content-Type", "application/json"),
        ],
        Some(&huge),
    );
    assert_eq!(reply.status, 413);
    let inbox = std::fs::read_to_string(fixture.session.dir.inbox()).unwrap();
    assert_eq!(inbox, "", "nothing refused was written");
    // A line the grammar rejects is answered with the reason and not written either.
    let bad = server.post(&path, &json!({ "line": "/goto nobody" }));
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("unknown role `nobody`"), "{}", bad.body);
    assert_eq!(
        std::fs::read_to_string(fixture.session.dir.inbox()).unwrap(),
        ""
    );
}

#[test]
fn a_posted_approve_lands_in_the_inbox_and_its_ack_reaches_the_stream() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([3.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    let server = Server::start(home.path());
    let id = fixture.id();
    let mut sse = Sse::open(server.addr, &format!("/api/sessions/{id}/stream"), None);
    let reply = server.post(
        &format!("/api/sessions/{id}/inbox"),
        &json!({ "line": "/approve" }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(answer["command"], "approve the awaited result");
    assert_eq!(
        std::fs::read_to_string(fixture.session.dir.inbox()).unwrap(),
        "/approve\n"
    );
    let written = fixture.coordinate_inbox();
    let streamed = sse.appends(written.len());
    let kinds: Vec<&str> = streamed.iter().map(|(_, e)| e.kind.as_str()).collect();
    assert_eq!(kinds[0], "user.approve");
    let ack = streamed
        .iter()
        .find(|(_, e)| e.kind.as_str() == "ack")
        .expect("an ack");
    assert_eq!(
        ack.1.metadata.as_ref().unwrap().ack_for.as_deref(),
        Some(streamed[0].0.as_str())
    );
    assert!(
        kinds.contains(&"done"),
        "approving a PARTIAL finishes the session: {kinds:?}"
    );
}

#[test]
fn the_page_carries_the_token_and_a_strict_csp() {
    let home = temp_home();
    let server = Server::start(home.path());
    let page = server.get("/");
    assert_eq!(page.status, 200);
    assert!(page.body.contains(&format!("content=\"{TOKEN}\"")));
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'")
            && csp.contains(&format!(
                "frame-src http://*.localhost:{}",
                server.preview.port()
            )),
        "{csp}"
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    for asset in crumb::studio::assets::ASSETS {
        assert_eq!(server.get(&format!("/assets/{}", asset.0)).status, 200);
    }
    // Asked for by every browser before the page names its icon: never a 404 in the console.
    assert_eq!(server.get("/favicon.ico").status, 200);
    assert_eq!(server.get("/assets/..%2fCargo.toml").status, 404);
    assert_eq!(server.get("/api/sessions/not-a-session").status, 404);
    assert_eq!(
        server
            .get("/api/sessions/01JZZZZZZZZZZZZZZZZZZZZZZZ/events")
            .status,
        404
    );
    server.shutdown();
}

#[test]
fn studio_refuses_a_public_bind_without_the_flag() {
    let home = temp_home();
    let run = crumb()
        .args(["studio", "--bind", "0.0.0.0", "--port", "0", "--no-open"])
        .env("CRUMB_HOME", home.path())
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("--allow-remote"), "{}", run.stderr);
}
