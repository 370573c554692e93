//! The new-session form starts what the command line can start: the pipeline's declared inputs as a
//! form (type, default, required), a binding per role, a mock scenario, each adapter's readiness
//! as `crumb doctor` finds it — and refuses, with `crumb run`'s own reason, what it refuses.

use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
use super::outcomes::laptop;
use super::*;

#[test]
fn a_run_started_from_the_page_records_its_input_and_its_binding() {
    let exe = crate::support::chromium();
    let home = temp_home();
    let server = Server::start(home.path());
    // The form's source: the pipeline's one compile.
    let form = server.get_json("/api/pipelines/form?path=pipelines/code.yaml");
    assert_eq!(form["inputs"][0]["name"], "min_python", "{form}");
    assert_eq!(form["inputs"][0]["required"], false);
    assert!(
        form["roles"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "code-reviewer")
    );
    let adapters = server.get_json("/api/adapters");
    let rows = adapters["adapters"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|a| a["adapter"] == "mock" && a["ready"] == true),
        "{adapters}"
    );
    assert!(
        rows.iter()
            .any(|a| a["adapter"] == "codex" && a.get("installed").is_some()),
        "{adapters}"
    );
    // What `crumb run` refuses is refused, with its reason.
    let refused = server.post(
        "/api/sessions",
        &json!({ "pipeline": "pipelines/code.yaml", "pitch": "a refused run", "bindings": { "nobody": "mock" } }),
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("nobody"),
        "the reason names the role: {}",
        refused.body
    );

    let base = format!("http://127.0.0.1:{}/", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &base).await;
        laptop(&page).await;
        page.evaluate("document.querySelector('#new-toggle').click()").await.unwrap();
        if !wait_in_page(&page, "[...document.querySelectorAll('#new-pipeline option')].some(o => o.value === 'pipelines/code.yaml')", Duration::from_secs(20)).await {
            page_failure(&page, "the pipelines in the form").await;
        }
        page.evaluate("{ const s = document.querySelector('#new-pipeline'); s.value = 'pipelines/code.yaml'; s.dispatchEvent(new Event('change')); }").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('#new-input-min_python') && !!document.querySelector('#new-bind-code-reviewer option[value=\"mock\"]') && document.querySelector('#new-readiness').textContent.includes('codex')", Duration::from_secs(30)).await {
            page_failure(&page, "the declared input, the per-role bindings and the adapters' readiness").await;
        }
        assert_eq!(page_text(&page, "document.querySelector('#new-input-min_python').value").await, "3.9", "the declared default");
        page.evaluate("document.querySelector('#new-input-min_python').value = '3.12'; document.querySelector('#new-bind-code-reviewer').value = 'mock'; document.querySelector('#new-pitch').value = 'a module started from the page'; document.querySelector('#new-form').requestSubmit()").await.unwrap();
        if !wait_in_page(&page, "location.hash.startsWith('#/session/') && !!document.querySelector('#session-head code')", Duration::from_secs(30)).await {
            page_failure(&page, "the new session opens").await;
        }
        chromium.shutdown().await;
    });
    let id = super::outcomes::crumb_session(&server, "a module started from the page");
    let dir = std::fs::read_dir(home.path().join("projects"))
        .unwrap()
        .flatten()
        .map(|p| p.path().join("sessions").join(&id))
        .find(|p| p.is_dir())
        .expect("the session folder");
    let (events, _) = read_path(&dir.join("transcript.jsonl")).unwrap();
    let start = events
        .iter()
        .find(|e| e.kind == Kind::SessionStart)
        .expect("session.start");
    let data = start.data.as_ref().unwrap();
    assert_eq!(
        data.get("inputs").and_then(|i| i.get("min_python")),
        Some(&json!("3.12")),
        "{data:?}"
    );
    assert_eq!(
        data.get("bindings")
            .and_then(|b| b.get("code-reviewer"))
            .and_then(|b| b.get("adapter")),
        Some(&json!("mock")),
        "{data:?}"
    );
    server.shutdown();
}
