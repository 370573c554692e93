//! Issue 15's security probes, each refused: symlinked and hard-linked logs and prompts, DNS
//! rebinding and tokenless reads of a remote Studio, a pitch that looks like an option, and one
//! session's preview origin reaching another's files.

use super::*;

#[test]
fn logs_and_prompts_are_confined_like_artifacts() {
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let dir = &fixture.session.dir;
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    std::fs::create_dir_all(dir.path().join("prompts")).unwrap();
    let outside = home.path().join("secret.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.log_path("builder", 9)).unwrap();
    std::os::unix::fs::symlink(&outside, dir.prompt_path("builder", 9)).unwrap();
    std::fs::hard_link(&outside, dir.log_path("builder", 8)).unwrap();
    std::fs::write(dir.log_path("builder", 1), "wrote game/index.html").unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    for path in ["logs/builder/9", "prompts/builder/9", "logs/builder/8"] {
        let reply = server.get(&format!("/api/sessions/{id}/{path}"));
        assert_eq!(reply.status, 403, "{path}: {}", reply.body);
        assert!(!reply.body.contains("root:") && !reply.body.contains("secret"));
    }
    let ok = server.get(&format!("/api/sessions/{id}/logs/builder/1"));
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body, "wrote game/index.html");
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one remote server, every probe against it"
)]
fn a_remote_studio_keeps_its_host_list_and_needs_the_token_for_reads() {
    let home = temp_home();
    let fixture = Fixture::new(home.path());
    let server = Server::start_with(home.path(), |c| {
        c.allow_remote = true;
        c.allow_hosts = vec!["studio.lan".into()];
    });
    let id = fixture.id();
    let port = server.addr.port();
    let lan = format!("studio.lan:{port}");
    let get =
        |path: &str, headers: &[(&str, &str)]| request(server.addr, "GET", path, headers, None);
    // DNS rebinding: a foreign name is refused even with the token.
    let rebound = get(
        "/api/health",
        &[
            ("Host", &format!("evil.example:{port}")),
            ("X-Crumb-Token", TOKEN),
        ],
    );
    assert_eq!(rebound.status, 421);
    let page = get("/", &[("Host", "evil.example")]);
    assert_eq!(page.status, 421);
    assert!(
        !page.body.contains(TOKEN),
        "the token never reaches a rebound page"
    );
    // Reads need the token: header, or the cookie that opening `/?token=` sets.
    for path in [
        "/",
        "/api/sessions",
        &format!("/api/sessions/{id}"),
        "/api/stream",
    ] {
        let reply = get(path, &[("Host", &lan)]);
        assert_eq!(reply.status, 401, "{path}: {}", reply.body);
        assert!(!reply.body.contains(TOKEN));
    }
    assert_eq!(
        get("/api/sessions", &[("Host", &lan), ("X-Crumb-Token", TOKEN)]).status,
        200
    );
    let opened = get(&format!("/?token={TOKEN}"), &[("Host", &lan)]);
    assert_eq!(opened.status, 200);
    let cookie = opened
        .header("set-cookie")
        .expect("the token is remembered")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let jar = cookie.split(';').next().unwrap().to_owned();
    assert_eq!(
        get("/api/sessions", &[("Host", &lan), ("Cookie", &jar)]).status,
        200
    );
    // A write needs the header itself: the cookie alone (a cross-site form) is not enough.
    let inbox = format!("/api/sessions/{id}/inbox");
    let origin = format!("http://{lan}");
    let body = json!({ "line": "/note hi" }).to_string();
    let write = request(
        server.addr,
        "POST",
        &inbox,
        &[
            ("Host", &lan),
            ("Cookie", &jar),
            ("Origin", &origin),
            ("Content-Type", "application/json"),
        ],
        Some(&body),
    );
    assert_eq!(write.status, 403, "{}", write.body);
    let evil_origin = request(
        server.addr,
        "POST",
        &inbox,
        &[
            ("Host", &lan),
            ("X-Crumb-Token", TOKEN),
            ("Origin", "http://evil.example"),
            ("Content-Type", "application/json"),
        ],
        Some(&body),
    );
    assert_eq!(evil_origin.status, 403);
    let good = request(
        server.addr,
        "POST",
        &inbox,
        &[
            ("Host", &lan),
            ("X-Crumb-Token", TOKEN),
            ("Origin", &origin),
            ("Content-Type", "application/json"),
        ],
        Some(&body),
    );
    assert_eq!(good.status, 202, "{}", good.body);
    // The remote preview needs the session's key.
    std::fs::create_dir_all(fixture.dir().join("artifacts")).unwrap();
    std::fs::write(fixture.dir().join("artifacts/index.html"), "<p>game</p>").unwrap();
    let preview_host = format!(
        "{}.studio.lan:{}",
        id.to_ascii_lowercase(),
        server.preview.port()
    );
    let bare = request(server.preview, "GET", "/", &[("Host", &preview_host)], None);
    assert_eq!(bare.status, 401);
    let key = server.get_json_with(
        &format!("/api/sessions/{id}"),
        &[("Host", &lan), ("X-Crumb-Token", TOKEN)],
    )["preview_key"]
        .as_str()
        .expect("a remote session carries its preview key")
        .to_owned();
    let keyed = request(
        server.preview,
        "GET",
        &format!("/?k={key}"),
        &[("Host", &preview_host)],
        None,
    );
    assert_eq!(keyed.status, 200);
    assert!(keyed.body.contains("game"));
}

#[test]
fn the_remote_warning_says_remote_users_can_instruct_agents() {
    let home = temp_home();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = crumb()
        .args([
            "studio",
            "--bind",
            "0.0.0.0",
            "--port",
            &port.to_string(),
            "--no-open",
            "--allow-remote",
            "--allow-host",
            "studio.lan",
        ])
        .env("CRUMB_HOME", home.path())
        .spawn();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    crate::support::eventually("the remote Studio answers", Duration::from_secs(20), || {
        TcpStream::connect(addr).ok()?;
        (request(addr, "GET", "/api/health", &[], None).status == 401).then_some(())
    });
    child.signal(nix::sys::signal::Signal::SIGINT);
    let run = child.wait();
    assert!(run.stderr.contains("instruct its agents"), "{}", run.stderr);
    assert!(run.stderr.contains("studio.lan"), "{}", run.stderr);
    assert!(
        run.stdout.contains("?token="),
        "the address to open carries the token: {}",
        run.stdout
    );
}

#[test]
fn a_pitch_that_looks_like_an_option_is_a_pitch() {
    let home = temp_home();
    let server = Server::start(home.path());
    let pitch = "--help me write about sourdough";
    let reply = server.post(
        "/api/sessions",
        &json!({ "pipeline": "pipelines/doc-review.yaml", "pitch": pitch }),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let id = serde_json::from_str::<Value>(&reply.body).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let state = server.get_json(&format!("/api/sessions/{id}"));
    assert_eq!(state["meta"]["goal"], pitch);
}

#[test]
fn one_session_preview_cannot_reach_another_sessions_files() {
    let home = temp_home();
    let mut a = Fixture::new(home.path());
    a.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let mut b = Fixture::new(home.path());
    b.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    std::fs::write(b.dir().join("artifacts/game/b-only.txt"), "b's secret").unwrap();
    let server = Server::start(home.path());
    assert_eq!(server.preview_get(&b.id(), "/game/b-only.txt").status, 200);
    let from_a = server.preview_get(&a.id(), "/game/b-only.txt");
    assert_eq!(from_a.status, 404);
    assert!(!from_a.body.contains("secret"));
    // The old shared path scheme is gone.
    let shared = server.preview_get(&a.id(), &format!("/s/{}/game/b-only.txt", b.id()));
    assert_eq!(shared.status, 404);
}
