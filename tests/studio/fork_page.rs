//! A fork started from the page: a real mock session run to its end, opened in a real headless
//! Chromium, forked with the "fork" button of a row after the goal; the page opens the new
//! session, whose header names its parent, and the fork's transcript on disk says so too.

use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
use super::outcomes::crumb_session;
use super::*;

/// The directory of session `id` under the crumb home (whatever its project).
fn session_dir(home: &Path, id: &str) -> Option<PathBuf> {
    std::fs::read_dir(home.join("projects"))
        .ok()?
        .filter_map(Result::ok)
        .map(|p| p.path().join("sessions").join(id))
        .find(|d| d.join("transcript.jsonl").is_file())
}

fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("transcript.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

#[test]
fn the_feed_forks_from_a_row_and_opens_the_fork() {
    let exe = crate::support::chromium();
    let home = temp_home();
    let goal = "a dodger forked from the page";
    crumb()
        .args([
            "run",
            "pipelines/casual.yaml",
            goal,
            "--preset",
            "mock",
            "--mock-scenario",
            "fail-once",
        ])
        .env("CRUMB_HOME", home.path())
        .env("CRUMB_NO_OPEN", "1")
        .timeout(Duration::from_secs(120))
        .run()
        .expect_code(0);
    let server = Server::start(home.path());
    let parent = crumb_session(&server, goal);
    let parent_events = events(&session_dir(home.path(), &parent).expect("the parent on disk"));
    let id_of = |kind: &str| {
        parent_events.iter().find(|e| e["kind"] == kind).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let spec = id_of("spec");
    let start = id_of("session.start");
    let base = format!("http://127.0.0.1:{}/#/session/{parent}", server.addr.port());

    let fork = browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &base).await;
        let button = format!("#feed .ev[data-id=\"{spec}\"] button.ev-fork");
        let shown = format!(
            "(() => {{ const b = document.querySelector('{}'); return !!b && getComputedStyle(b).display !== 'none' && b.textContent === 'fork' && b.title === 'Start a new session from this point'; }})()",
            button.replace('\'', "\\'")
        );
        if !wait_in_page(&page, &shown, Duration::from_secs(20)).await {
            page_failure(&page, "the fork button on the first spec row").await;
        }
        let on_start = page_text(
            &page,
            &format!("String(!!document.querySelector('#feed .ev[data-id=\"{start}\"] button.ev-fork'))"),
        )
        .await;
        assert_eq!(on_start, "false", "no fork before the goal");
        page.find_element(button.as_str())
            .await
            .expect("the fork button")
            .click()
            .await
            .expect("click fork");
        let forked = format!(
            "(() => {{ const f = document.querySelector('#fork-of'); const c = document.querySelector('#session-head code'); return !!f && !!c && c.textContent !== '{parent}' && location.hash.includes(c.textContent) && f.textContent.startsWith('forked from {parent} at ') && f.querySelector('a').getAttribute('href') === '#/session/{parent}'; }})()"
        );
        if !wait_in_page(&page, &forked, Duration::from_secs(60)).await {
            page_failure(&page, "the fork's session, naming its parent").await;
        }
        let fork = page_text(&page, "document.querySelector('#session-head code').textContent").await;
        let alerts = page_text(&page, "document.getElementById('alerts').textContent").await;
        assert!(!alerts.contains("fork"), "{alerts}");
        chromium.shutdown().await;
        fork
    });
    assert_ne!(fork, parent);
    let dir = crate::support::eventually("the fork on disk", Duration::from_secs(30), || {
        session_dir(home.path(), &fork)
    });
    let first =
        crate::support::eventually("the fork's session.start", Duration::from_secs(30), || {
            events(&dir)
                .into_iter()
                .find(|e| e["kind"] == "session.start")
        });
    assert_eq!(first["data"]["fork"]["parent"], parent.as_str(), "{first}");
    assert_eq!(first["data"]["fork"]["at"], spec.as_str(), "{first}");
    // Let the fork run to its end before the home goes away.
    wait_for_state(&server, &fork, "the fork ends", |s| {
        !s["state"]["done"].is_null()
    });
}
