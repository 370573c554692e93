//! Studio for keyboards and assistive technology, in a real headless Chromium at 1280×720 with
//! axe-core (installed from npm by `scripts/axe-core.sh`) injected into every view: the list, a
//! session of each outcome with each tab, the new-session form. And the conversation that lasts:
//! a thread rebuilt from the session's files after a reload, with an `/ask` answer in full and a
//! queued approve that withdraws the buttons it would contradict.

use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
use super::outcomes::laptop;
use super::*;

/// The path of `axe.min.js`, installed once into the test cache.
fn axe_script() -> String {
    let out = std::process::Command::new("timeout")
        .arg("600")
        .arg("sh")
        .arg(repo_root().join("scripts/axe-core.sh"))
        .output()
        .expect("run scripts/axe-core.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8(out.stdout).unwrap();
    std::fs::read_to_string(path.trim()).expect("axe.min.js")
}

/// axe-core's serious and critical violations in the page as it is now (`[]` when none).
async fn violations(page: &chromiumoxide::Page, axe: &str, view: &str) -> String {
    if page_text(page, "typeof axe === 'object' ? 'yes' : 'no'").await != "yes" {
        page.evaluate(axe).await.expect("inject axe-core");
    }
    let found = page_text(
        page,
        "(async () => { const r = await axe.run(document, { resultTypes: ['violations'] }); \
         return JSON.stringify(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical') \
         .map(v => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')}`)); })()",
    )
    .await;
    assert!(!found.is_empty(), "{view}: axe-core did not run");
    found
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one page walked through every view in order"
)]
fn every_view_passes_axe_and_the_conversation_survives_a_reload() {
    let exe = crate::support::chromium();
    let axe = axe_script();
    let home = temp_home();
    let mut failed = Fixture::new(home.path());
    failed.run_to_verdict([1.0, 0.0, 1.0, 1.0, 1.0, 1.0], Verdict::Fail);
    let mut data = Data::new();
    data.insert("outcome".into(), json!("fail"));
    data.insert("reason".into(), json!("verdict_fail"));
    failed.append(
        Draft::new("system", Kind::Done)
            .body("verdict_fail")
            .data(data),
    );
    let mut passed = Fixture::new(home.path());
    passed.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let mut data = Data::new();
    data.insert("outcome".into(), json!("pass"));
    data.insert("reason".into(), json!("verdict_pass"));
    passed.append(
        Draft::new("system", Kind::Done)
            .body("verdict_pass")
            .data(data),
    );
    let mut waiting = Fixture::new(home.path());
    waiting.run_to_verdict([4.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    // A question asked from the CLI and answered by the engine before the page ever opened.
    std::fs::write(waiting.session.dir.inbox(), "/ask status\n").unwrap();
    waiting.coordinate_inbox();
    let server = Server::start(home.path());
    let base = format!("http://127.0.0.1:{}/", server.addr.port());
    assert_eq!(server.get("/favicon.ico").status, 200);

    let thread = server.get_json(&format!("/api/sessions/{}/thread", waiting.id()));
    let lines = thread["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{thread}");
    assert_eq!(lines[0]["line"], "/ask status");
    assert!(
        lines[0]["answer"]
            .as_str()
            .is_some_and(|a| a.starts_with("session")),
        "the answer in full: {thread}"
    );

    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &base).await;
        laptop(&page).await;
        if !wait_in_page(&page, "document.querySelectorAll('#sessions .session').length === 3", Duration::from_secs(20)).await {
            page_failure(&page, "the list of three sessions").await;
        }
        let mut report: Vec<(String, String)> = Vec::new();
        report.push(("list".to_owned(), violations(&page, &axe, "list").await));

        // The filter matches the outcome, and says so when nothing matches.
        page.evaluate("{ const f = document.querySelector('#session-filter'); f.value = 'failed'; f.dispatchEvent(new Event('input')) }").await.unwrap();
        if !wait_in_page(&page, "document.querySelectorAll('#sessions .session').length === 1 && document.querySelector('#sessions .session').dataset.outcome === 'failed'", Duration::from_secs(10)).await {
            page_failure(&page, "filtering the list by outcome").await;
        }
        page.evaluate("{ const f = document.querySelector('#session-filter'); f.value = 'no-such-thing'; f.dispatchEvent(new Event('input')) }").await.unwrap();
        if !wait_in_page(&page, "(document.querySelector('#sessions .empty-list') || {}).textContent === 'No session matches “no-such-thing”.'", Duration::from_secs(10)).await {
            page_failure(&page, "a filter that matches nothing").await;
        }
        page.evaluate("{ const f = document.querySelector('#session-filter'); f.value = ''; f.dispatchEvent(new Event('input')) }").await.unwrap();

        // The new-session form: focus moves into it.
        page.evaluate("document.querySelector('#new-toggle').click()").await.unwrap();
        if !wait_in_page(&page, "document.activeElement === document.querySelector('#new-pipeline')", Duration::from_secs(5)).await {
            page_failure(&page, "focus in the new-session form").await;
        }
        report.push(("new-session form".to_owned(), violations(&page, &axe, "new-session form").await));
        page.evaluate("document.querySelector('#new-toggle').click()").await.unwrap();

        for (name, id) in [("failed", failed.id()), ("passed", passed.id()), ("waiting", waiting.id())] {
            page.evaluate(format!("location.hash = '#/session/{id}'")).await.unwrap();
            let ready = format!("document.querySelector('#session-head code') && document.querySelector('#session-head code').textContent === '{id}' && !!document.querySelector('#graph svg') && document.querySelectorAll('#feed .ev').length > 3");
            if !wait_in_page(&page, &ready, Duration::from_secs(20)).await {
                page_failure(&page, &format!("the {name} session")).await;
            }
            let head = page_text(&page, "document.querySelector('#session-head').textContent").await;
            assert!(!head.contains("null"), "{name}: the header reads {head:?}");
            // The feed is one tab stop however long it is, and its rows open from the keyboard.
            let stops = page_text(&page, "String([...document.querySelectorAll('#feed .ev, #feed .ev button')].filter(e => e.tabIndex === 0).length)").await;
            assert!(stops == "1" || stops == "2", "{name}: {stops} tab stops in the feed");
            page.evaluate("{ const r = document.querySelector('#feed .ev'); r.focus(); r.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true })) }").await.unwrap();
            assert_eq!(page_text(&page, "String(document.activeElement === document.querySelectorAll('#feed .ev')[1])").await, "true", "{name}: ↓ moves to the next row");
            page.evaluate("document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }))").await.unwrap();
            if !wait_in_page(&page, "!document.querySelector('#pane-Transcript').hidden && document.querySelector('#tab-Transcript').getAttribute('aria-selected') === 'true'", Duration::from_secs(5)).await {
                page_failure(&page, "Enter on a feed row opens it in the transcript").await;
            }
            for tab in ["Feed", "Transcript", "Artifacts", "Roles", "Time", "Versions"] {
                page.evaluate(format!("document.querySelector('#tab-{tab}').click()")).await.unwrap();
                let shown = format!("!document.querySelector('#pane-{tab}').hidden && document.querySelector('#pane-{tab}').childElementCount > 0");
                if !wait_in_page(&page, &shown, Duration::from_secs(10)).await {
                    page_failure(&page, &format!("{name}: the {tab} tab")).await;
                }
                report.push((format!("{name} · {tab}"), violations(&page, &axe, tab).await));
            }
            // ←/→ move between tabs.
            page.evaluate("{ const t = document.querySelector('#tab-Versions'); t.focus(); t.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true })) }").await.unwrap();
            assert_eq!(page_text(&page, "document.activeElement.id").await, "tab-Feed");
        }

        // The thread of the waiting session was rebuilt from its files: the CLI's /ask and its answer.
        if !wait_in_page(&page, "[...document.querySelectorAll('#thread .sent')].some(c => c.textContent.includes('/ask status') && !!c.querySelector('.answer'))", Duration::from_secs(10)).await {
            page_failure(&page, "the /ask answer in the thread").await;
        }
        // Approve with no coordinator: queued, and Approve/Veto are withdrawn.
        page.evaluate("document.querySelector('#approve').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('#queued') && !document.querySelector('#approve') && !document.querySelector('#veto')", Duration::from_secs(10)).await {
            page_failure(&page, "a queued approve withdraws Approve and Veto").await;
        }
        // Relative times move on: a time drawn as "0s ago" does not stay so.
        page.evaluate("{ const a = document.createElement('span'); a.className = 'ago'; a.id = 'probe-ago'; a.dataset.ts = new Date(Date.now() - 120000).toISOString(); a.textContent = '0s ago'; document.body.append(a); }").await.unwrap();
        if !wait_in_page(&page, "document.querySelector('#probe-ago').textContent === '2m ago'", Duration::from_secs(10)).await {
            page_failure(&page, "relative times tick").await;
        }
        // Nothing failed before the reload either (its entries go with the page).
        let failed_requests = page_text(&page, "JSON.stringify(performance.getEntriesByType('resource').filter(e => e.responseStatus >= 400).map(e => e.name))").await;
        assert_eq!(failed_requests, "[]");
        page.reload().await.expect("reload");
        let kept = "document.querySelectorAll('#thread .sent').length === 2 && !!document.querySelector('#thread .answer') && [...document.querySelectorAll('#thread .sent code')].map(c => c.textContent).join(',') === '/ask status,/approve' && !!document.querySelector('#queued') && !document.querySelector('#approve')";
        if !wait_in_page(&page, kept, Duration::from_secs(20)).await {
            page_failure(&page, "the thread after a reload").await;
        }
        report.push(("waiting after reload".to_owned(), violations(&page, &axe, "after reload").await));
        // Nothing failed on the way: no request answered with an error, no error banner.
        let failed_requests = page_text(&page, "JSON.stringify(performance.getEntriesByType('resource').filter(e => e.responseStatus >= 400).map(e => e.name))").await;
        assert_eq!(failed_requests, "[]");
        assert_eq!(page_text(&page, "String(document.querySelectorAll('#alerts .alert').length)").await, "0", "no error banner");
        chromium.shutdown().await;
        let bad: Vec<String> = report
            .iter()
            .filter(|(_, found)| found != "[]")
            .map(|(view, found)| format!("{view}: {found}"))
            .collect();
        assert!(bad.is_empty(), "serious or critical axe-core violations:\n{}", bad.join("\n"));
    });
    server.shutdown();
}
