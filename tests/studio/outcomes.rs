//! Each outcome looks the same in the list, the header, the banner and the tab title, in a real
//! headless Chromium at 1280×720: passed, failed by verdict, circuit open, stopped by a budget,
//! waiting for a person, degraded. With `CRUMB_STUDIO_SCREENS=1` the screenshots that
//! `docs/studio.md` shows are written to `docs/screens/` (`make screens`), so they never go stale.

use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
use super::*;

/// Resize the page to the laptop screen the layout is designed for.
pub async fn laptop(page: &chromiumoxide::Page) {
    use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
    page.execute(SetDeviceMetricsOverrideParams::new(1280, 720, 1.0, false))
        .await
        .expect("viewport");
}

/// Write a screenshot of `docs/studio.md` when `CRUMB_STUDIO_SCREENS` is set.
pub async fn screen(page: &chromiumoxide::Page, name: &str) {
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;
    if std::env::var_os("CRUMB_STUDIO_SCREENS").is_none() {
        return;
    }
    let png = page
        .screenshot(
            ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Png)
                .build(),
        )
        .await
        .expect("screenshot");
    let dir = repo_root().join("docs/screens");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// Record a `done` as the coordinator would.
fn end(fixture: &mut Fixture, outcome: &str, reason: &str) {
    let mut data = Data::new();
    data.insert("outcome".into(), json!(outcome));
    data.insert("reason".into(), json!(reason));
    fixture.append(Draft::new("system", Kind::Done).body(reason).data(data));
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one page, every outcome checked the same way"
)]
fn every_outcome_looks_the_same_everywhere() {
    let exe = crate::support::chromium();
    let home = temp_home();
    // Oldest first: the list shows newest first.
    let crashed = crumb()
        .args([
            "run",
            "pipelines/casual.yaml",
            "a builder that always crashes",
            "--preset",
            "mock",
            "--mock-scenario",
            "crash-always",
        ])
        .env("CRUMB_HOME", home.path())
        .env("CRUMB_NO_OPEN", "1")
        .run()
        .expect_code(23);
    assert!(
        crashed.stdout.contains("circuit_open:builder"),
        "{}",
        crashed.stdout
    );
    let mut budget = Fixture::new(home.path());
    budget.run_to_verdict([2.0, 5.0, 2.0, 2.0, 2.0, 2.0], Verdict::Fail);
    end(&mut budget, "stopped", "too_many_verify");
    let mut failed = Fixture::new(home.path());
    failed.run_to_verdict([1.0, 0.0, 1.0, 1.0, 1.0, 1.0], Verdict::Fail);
    end(&mut failed, "fail", "verdict_fail");
    let mut degraded = Fixture::new(home.path());
    degraded.run_to_verdict([4.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    std::fs::write(degraded.session.dir.inbox(), "/swap builder=mock\n").unwrap();
    degraded.coordinate_inbox();
    let mut passed = Fixture::new(home.path());
    passed.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    end(&mut passed, "pass", "verdict_pass");
    let mut waiting = Fixture::new(home.path());
    waiting.run_to_verdict([4.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    let server = Server::start(home.path());
    let base = format!("http://127.0.0.1:{}/", server.addr.port());

    // The list says the same as the server's outcome for every row, from the start: the engine's
    // corrected score, never the verifier's claim.
    let list = server.get_json("/api/sessions");
    let rows = list["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for row in rows {
        assert!(row["outcome"]["kind"].is_string(), "{row}");
        if row["verdict"].is_string() {
            assert_eq!(row["verdict_source"], "engine", "{row}");
        }
    }
    let kinds: Vec<&str> = rows
        .iter()
        .map(|r| r["outcome"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "waiting", "passed", "waiting", "failed", "stopped", "failed"
        ]
    );

    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &base).await;
        laptop(&page).await;
        if !wait_in_page(&page, "document.querySelectorAll('#sessions .session').length === 6", Duration::from_secs(20)).await {
            page_failure(&page, "the list of six sessions").await;
        }
        let listed = page_text(&page, "[...document.querySelectorAll('#sessions .session')].map(s => s.dataset.outcome + ':' + s.querySelector('.pill.outcome').textContent).join(',')").await;
        assert_eq!(listed, "waiting:Waiting for you,passed:Passed,waiting:Waiting for you,failed:Failed,stopped:Stopped by a budget,failed:Failed");
        let degraded_marks = page_text(&page, "String(document.querySelectorAll('#sessions .pill.degraded').length)").await;
        assert_eq!(degraded_marks, "1", "the swapped run is marked in the list");

        let cases: [(&str, String, &str, &[&str]); 6] = [
            ("passed", passed.id(), "good", &["Passed", "passed it at 27.0 (engine-corrected)"]),
            ("failed", failed.id(), "bad", &["Failed", "verdict was FAIL at 10.0 (engine-corrected)"]),
            ("stopped", budget.id(), "bad", &["Stopped by a budget", "verifications without a pass"]),
            ("waiting", waiting.id(), "warn", &["Waiting for you", "PARTIAL", "Approve"]),
            ("waiting", degraded.id(), "warn", &["Degraded: builder ran on mock"]),
            ("failed", crumb_session(&server, "a builder that always crashes"), "bad", &["Failed", "the builder failed 3 times; circuit opened"]),
        ];
        for (kind, id, tone, words) in cases {
            page.evaluate(format!("location.hash = '#/session/{id}'")).await.unwrap();
            let probe = format!("!!document.querySelector('#outcome.outcome-{kind}') && document.querySelector('#session-head code').textContent === '{id}' && !!document.querySelector('#graph svg')");
            if !wait_in_page(&page, &probe, Duration::from_secs(20)).await {
                page_failure(&page, &format!("the {kind} session {id}")).await;
            }
            let banner = page_text(&page, "document.querySelector('#outcome').textContent").await;
            for word in words {
                assert!(banner.contains(word), "{kind}: {word:?} not in {banner:?}");
            }
            assert!(page_text(&page, "document.title").await.starts_with(&page_text(&page, "document.querySelector('#outcome .outcome-title').textContent").await));
            assert_eq!(page_text(&page, "document.querySelector('link[rel=icon]').dataset.tone").await, tone);
            assert_eq!(page_text(&page, "document.querySelector('#session-head .pill.outcome').textContent").await, page_text(&page, "document.querySelector('#outcome .outcome-title').textContent").await);
            if kind != "waiting" {
                // Ended: the command bar says why it is off; stops are on the graph.
                assert_eq!(page_text(&page, "String(document.querySelector('#command').disabled)").await, "true");
                assert!(page_text(&page, "document.querySelector('#command-off').textContent").await.contains("has ended"));
            }
            if (kind == "stopped" || id == crumb_session(&server, "a builder that always crashes"))
                && !wait_in_page(&page, "!!document.querySelector('#graph .node.shape-stop.current')", Duration::from_secs(10)).await
            {
                page_failure(&page, "the engine's stop on the graph").await;
            }
            // Outcome, scorecard, budgets and the newest feed row are on one 1280×720 screen.
            let visible = page_text(&page, "String(['#outcome', '#scorecard', '#budgets', '#feed .ev'].every(s => { const r = document.querySelector(s).getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }))").await;
            if visible != "true" {
                page_failure(&page, &format!("{kind}: outcome, scorecard, budgets and the newest feed row above the fold")).await;
            }
            match kind {
                "passed" => screen(&page, "passed").await,
                "waiting" if id == waiting.id() => screen(&page, "waiting").await,
                "failed" if id != failed.id() => screen(&page, "failed").await,
                _ => {}
            }
        }
        page.evaluate("location.hash = '#/'").await.unwrap();
        screen(&page, "list").await;
        chromium.shutdown().await;
    });
}

/// The id of the session whose goal is `goal`.
pub fn crumb_session(server: &Server, goal: &str) -> String {
    let list = server.get_json("/api/sessions?limit=500");
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["goal"] == goal)
        .and_then(|s| s["id"].as_str())
        .expect("the session")
        .to_owned()
}
