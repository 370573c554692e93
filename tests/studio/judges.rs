//! Parallel judges in Studio: `pipelines/cross-verify.yaml` run for real (its scripted example
//! agents), then shown with one row per judge and the join's rule and result; the banner names the
//! roles the pipeline declares, never a "verifier" it does not have.

use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
use super::outcomes::{crumb_session, laptop, screen};
use super::*;

const TOPIC: &str = "why sourdough needs time";

#[test]
fn parallel_judges_side_by_side_and_the_banner_names_them() {
    let exe = crate::support::chromium();
    let home = temp_home();
    crumb()
        .arg("run")
        .arg(repo_root().join("pipelines/cross-verify.yaml"))
        .arg(TOPIC)
        .env("CRUMB_HOME", home.path())
        .env("CRUMB_STUDIO_PORT", "1")
        .env("CRUMB_NO_OPEN", "1")
        .run()
        .expect_code(0);
    let server = Server::start(home.path());
    let id = crumb_session(&server, TOPIC);
    let session = server.get_json(&format!("/api/sessions/{id}"));
    let detail = session["outcome"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("judge-a and judge-b (combined: all_pass) passed it"),
        "{detail}"
    );
    assert!(!detail.contains("verifier"), "{detail}");
    let join = &session["scorecard"]["join"];
    assert_eq!(join["combine"], "all_pass", "{join}");
    assert_eq!(join["branches"].as_array().map(Vec::len), Some(2), "{join}");

    let base = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &base).await;
        laptop(&page).await;
        if !wait_in_page(&page, "document.querySelectorAll('#judges .judge-row').length === 2 && !!document.querySelector('#judges .join-row')", Duration::from_secs(20)).await {
            page_failure(&page, "both judges and the join on the scorecard").await;
        }
        let judges = page_text(&page, "[...document.querySelectorAll('#judges .judge-row')].map(r => r.dataset.role + ':' + r.querySelector('.pill').textContent).sort().join(',')").await;
        assert_eq!(judges, "judge-a:PASS,judge-b:PASS");
        let caption = page_text(&page, "document.querySelector('#judges caption').textContent").await;
        assert_eq!(caption, "2 judges · combined by all_pass");
        if !wait_in_page(&page, "!!document.querySelector('#graph svg .node')", Duration::from_secs(20)).await {
            page_failure(&page, "the cross-verify graph").await;
        }
        screen(&page, "judges").await;
        let banner = page_text(&page, "document.querySelector('#outcome').textContent").await;
        assert!(banner.contains("judge-a and judge-b") && !banner.contains("verifier"), "{banner}");
        chromium.shutdown().await;
    });
    server.shutdown();
}
