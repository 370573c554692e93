//! Studio's versions: the list, a release from a row's event, a version as a zip, a round's
//! "what changed", any round's tree on the preview origin, and `crumb why`'s first line in the
//! banner's outcome.

use super::*;
use crate::fork::lines;

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

/// The page: a build row's "release" makes a version the Versions tab lists, its "changed"
/// shows what the repair changed, its "preview" opens that round's tree, and the banner says
/// why the session ended.
#[test]
fn the_feed_releases_and_compares_a_round() {
    use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
    let exe = crate::support::chromium();
    let scratch = crate::run::Scratch::new();
    let session = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    let id = session.file_name().unwrap().to_str().unwrap().to_owned();
    let events = lines(&session);
    let builds: Vec<String> = events
        .iter()
        .filter(|e| e["kind"] == "build")
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let server = Server::start(&scratch.home());
    let base = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &base).await;
        let release = format!("#feed .ev[data-id=\"{}\"] button.ev-release", builds[0]);
        let shown = format!("!!document.querySelector('{}')", release.replace('\'', "\\'"));
        if !wait_in_page(&page, &shown, Duration::from_secs(20)).await {
            page_failure(&page, "the release button on the first build's row").await;
        }
        let why = page_text(&page, "(document.getElementById('outcome-why') || {}).textContent || ''").await;
        assert!(why.starts_with("Why: pass (verdict_pass)"), "{why}");
        let preview = page_text(
            &page,
            &format!("document.querySelector('#feed .ev[data-id=\"{}\"] a.ev-round').getAttribute('href')", builds[0]),
        )
        .await;
        assert!(preview.contains(&format!("/@round/{}/game/index.html", builds[0])), "{preview}");
        page_text(&page, "(window.prompt = () => 'from-page', 'ok')").await;
        page.find_element(release.as_str())
            .await
            .expect("the release button")
            .click()
            .await
            .expect("click release");
        let listed = "!!document.querySelector('#versions tr[data-version=\"from-page\"] a[href$=\"/versions/from-page/zip\"]')";
        if !wait_in_page(&page, listed, Duration::from_secs(20)).await {
            page_failure(&page, "the released version in the Versions tab").await;
        }
        let changed = format!("#feed .ev[data-id=\"{}\"] button.ev-changed", builds[1]);
        page.find_element(changed.as_str())
            .await
            .expect("the changed button")
            .click()
            .await
            .expect("click changed");
        let diff = format!(
            "(() => {{ const d = document.getElementById('what-changed'); return !!d && !d.hidden && d.textContent.startsWith('{} → {}') && d.textContent.includes('changed game/'); }})()",
            builds[0], builds[1]
        );
        if !wait_in_page(&page, &diff, Duration::from_secs(20)).await {
            page_failure(&page, "what the repair changed").await;
        }
        chromium.shutdown().await;
    });
    let versions = server.get_json(&format!("/api/sessions/{id}/versions"));
    assert_eq!(versions["versions"][0]["name"], "from-page");
    assert_eq!(versions["versions"][0]["at"], builds[0].as_str());
}
