//! Studio in a real headless Chromium (found with the product's own `locate()`): the command bar,
//! the artifacts panel, a real mock run approved from the page, and a 100k-event session.

use super::*;
use crumb::qa::browser::launch::Chromium;

/// A runtime for one browser test: Chromium's protocol handler runs beside the test's own task.
pub fn browser_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Launch Chromium and open `url` in a 1440×1100 page.
pub async fn open_studio(exe: &Path, url: &str) -> (Chromium, chromiumoxide::Page) {
    use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
    let chromium = Chromium::launch(exe).await.expect("launch Chromium");
    let page = chromium
        .browser
        .new_page("about:blank")
        .await
        .expect("page");
    page.execute(SetDeviceMetricsOverrideParams::new(1440, 1100, 1.0, false))
        .await
        .expect("viewport");
    page.goto(url).await.expect("open Studio");
    (chromium, page)
}

/// Where browser screenshots are kept.
pub fn artifact_dir() -> PathBuf {
    repo_root().join("target/studio-e2e")
}

/// A PNG of coloured tiles standing in for a QA screenshot.
fn tiles_png(width: u32, height: u32) -> Vec<u8> {
    let colours = [
        [229, 83, 75],
        [63, 182, 139],
        [91, 156, 240],
        [231, 178, 61],
    ];
    let mut pixels = Vec::with_capacity((width * height * 3) as usize);
    for y in 0..height {
        for x in 0..width {
            let c = colours[((x / 40) * 7 + (y / 40) * 3) as usize % 4];
            let edge = x % 40 < 3 || y % 40 < 3;
            pixels.extend(if edge { [17, 17, 17] } else { c });
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .unwrap()
        .write_image_data(&pixels)
        .unwrap();
    out
}

/// Poll `probe` in the page until it returns true, up to `limit` (a condition wait, not a sleep).
pub async fn wait_in_page(page: &chromiumoxide::Page, probe: &str, limit: Duration) -> bool {
    crate::support::eventually_async(limit, || async {
        page.evaluate(probe)
            .await
            .ok()
            .and_then(|v| v.into_value::<bool>().ok())
            .unwrap_or(false)
            .then_some(())
    })
    .await
    .is_some()
}

/// Fail with what the page shows, keeping a screenshot of it.
pub async fn page_failure(page: &chromiumoxide::Page, what: &str) -> ! {
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;
    let text = page_text(page, "document.body.innerText").await;
    if let Ok(png) = page
        .screenshot(
            ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Png)
                .build(),
        )
        .await
    {
        let _ = std::fs::create_dir_all(artifact_dir());
        let _ = std::fs::write(artifact_dir().join("failure.png"), png);
    }
    panic!("{what}\n--- page text\n{text}");
}

pub async fn page_text(page: &chromiumoxide::Page, expression: &str) -> String {
    page.evaluate(expression)
        .await
        .ok()
        .and_then(|v| v.into_value::<String>().ok())
        .unwrap_or_default()
}

#[test]
fn end_to_end_in_headless_chromium_approve_from_the_command_bar() {
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;

    let exe = crate::support::chromium();
    let home = temp_home();
    let mut done = Fixture::new(home.path());
    done.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([4.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    std::fs::create_dir_all(fixture.dir().join("qa")).unwrap();
    std::fs::write(fixture.dir().join("qa/boots.png"), tiles_png(320, 240)).unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    let shots = artifact_dir();
    std::fs::create_dir_all(&shots).unwrap();

    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &url).await;
        if !wait_in_page(&page, "document.querySelectorAll('#sessions .session').length === 2 && !!document.querySelector('#aggregate')", Duration::from_secs(20)).await {
            page_failure(&page, "Studio shows both sessions and the scorecard").await;
        }
        assert_eq!(page_text(&page, "document.querySelector('#scorecard .pill').textContent").await, "PARTIAL");
        assert_eq!(page_text(&page, "document.querySelector('#aggregate').firstChild.textContent").await, "21.0");
        let sources = page_text(&page, "[...document.querySelectorAll('#scorecard .chip')].map(c => c.textContent).join(',')").await;
        assert!(sources.starts_with("model,QA,model,engine"), "source chips: {sources}");
        if !wait_in_page(&page, "!!document.querySelector('#graph .node.current[data-node=\"await_human\"]')", Duration::from_secs(10)).await {
            page_failure(&page, "the graph marks the awaited person").await;
        }
        assert!(page_text(&page, "document.querySelector('#outcome.outcome-waiting').textContent").await.contains("Approve"));

        // Send /approve from the command bar with real key presses.
        let input = page.find_element("#command").await.expect("command bar");
        input.click().await.unwrap();
        input.type_str("/approve").await.unwrap();
        input.press_key("Enter").await.unwrap();
        let inbox = fixture.session.dir.inbox();
        let reached = crate::support::eventually_async(Duration::from_secs(10), || async {
            (std::fs::read_to_string(&inbox).unwrap_or_default() == "/approve\n").then_some(())
        })
        .await;
        assert!(reached.is_some(), "the line never reached inbox.txt");
        let written = fixture.coordinate_inbox();
        assert!(written.iter().any(|e| e.kind == Kind::Done));
        if !wait_in_page(&page, "!!document.querySelector('.sent .ack.good') && !!document.querySelector('#outcome.outcome-passed')", Duration::from_secs(15)).await {
            page_failure(&page, "the ack shows under the line and the session finishes").await;
        }
        assert!(page_text(&page, "document.querySelector('.sent .ack.good').textContent").await.starts_with('✓'));

        // Artifacts: QA screenshot, per-check results and the game in the sandboxed preview.
        page.evaluate("document.querySelector('[data-tab=Artifacts]').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('iframe.game') && !!document.querySelector('.shot img') && document.querySelector('.shot img').complete && document.querySelectorAll('.checks tr').length === 2", Duration::from_secs(10)).await {
            page_failure(&page, "artifacts panel").await;
        }
        let frame = page_text(&page, "new URL(document.querySelector('iframe.game').src).origin").await;
        assert_eq!(frame, format!("http://{}.localhost:{}", id.to_ascii_lowercase(), server.preview.port()), "the session's own preview origin");
        page.evaluate("document.querySelector('[data-tab=Feed]').click(); document.querySelector('#main').scrollTop = 0").await.unwrap();
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("session.png"), &png).unwrap();
        page.evaluate("document.querySelector('[data-tab=Artifacts]').click(); document.querySelector('.tabs-card').scrollIntoView()").await.unwrap();
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("artifacts.png"), &png).unwrap();

        // Game code, even opened at the top level of the preview origin, cannot reach the API.
        let hostile = format!(
            r"<!doctype html><body><script>
            const api = 'http://127.0.0.1:{port}/api/sessions/{id}/inbox';
            Promise.allSettled([
              fetch('http://127.0.0.1:{port}/api/sessions').then(r => r.text()),
              fetch(api, {{ method: 'POST', headers: {{ 'content-type': 'application/json' }}, body: JSON.stringify({{ line: '/veto from the game' }}) }}),
            ]).then(results => {{ document.body.dataset.result = results.map(r => r.status).join(','); }});
            </script></body>",
            port = server.addr.port()
        );
        std::fs::write(fixture.dir().join("artifacts/game/probe.html"), hostile).unwrap();
        let probe = format!("http://{}.localhost:{}/game/probe.html", id.to_ascii_lowercase(), server.preview.port());
        page.goto(probe.as_str()).await.expect("open the probe");
        if !wait_in_page(&page, "!!document.body.dataset.result", Duration::from_secs(10)).await {
            page_failure(&page, "the probe game never finished").await;
        }
        assert_eq!(page_text(&page, "document.body.dataset.result").await, "rejected,rejected");
        assert_eq!(std::fs::read_to_string(&inbox).unwrap(), "/approve\n", "the game wrote nothing");
        chromium.shutdown().await;
    });
}

#[test]
fn end_to_end_a_real_mock_run_is_approved_from_the_page() {
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;

    let exe = crate::support::chromium();
    let home = temp_home();
    let server = Server::start(home.path());
    // Started the way the page's form does: `crumb run --wait` in the background.
    let id = start_partial(&server, "neon match-3 with combo bonus");
    wait_for_state(&server, &id, "the PARTIAL verdict", |s| {
        s["state"]["awaiting"].is_object()
    });
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    let shots = artifact_dir();
    std::fs::create_dir_all(&shots).unwrap();
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &url).await;
        if !wait_in_page(&page, "!!document.querySelector('#outcome.outcome-waiting') && !!document.querySelector('#aggregate') && !!document.querySelector('#graph .node.current')", Duration::from_secs(20)).await {
            page_failure(&page, "an awaiting session with its scorecard and graph").await;
        }
        assert_eq!(page_text(&page, "document.querySelector('#scorecard .pill').textContent").await, "PARTIAL");
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("real-awaiting.png"), &png).unwrap();
        let input = page.find_element("#command").await.expect("command bar");
        input.click().await.unwrap();
        input.type_str("/approve").await.unwrap();
        input.press_key("Enter").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('.sent .ack.good') && !!document.querySelector('#outcome.outcome-passed')", Duration::from_secs(30)).await {
            page_failure(&page, "the coordinator's ack and the finished session").await;
        }
        page.evaluate("document.querySelector('[data-tab=Artifacts]').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('iframe.game') && [...document.querySelectorAll('.shot img')].every(i => i.complete)", Duration::from_secs(10)).await {
            page_failure(&page, "the artifacts panel with the game").await;
        }
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("real-finished.png"), &png).unwrap();
        page.evaluate("document.querySelector('.tabs-card').scrollIntoView()").await.unwrap();
        let png = page.screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build()).await.expect("screenshot");
        std::fs::write(shots.join("real-artifacts.png"), &png).unwrap();
        chromium.shutdown().await;
    });
    wait_for_state(&server, &id, "the finished session", |s| {
        s["state"]["done"].is_object()
    });
}

/// Append `n` thought events straight to the transcript (fast; the writer's lock is not what is
/// being tested), with ids after every existing one.
fn append_many(fixture: &Fixture, n: usize) {
    let mut generator = ulid::Generator::new();
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(fixture.session.dir.transcript())
        .unwrap();
    let mut out = std::io::BufWriter::new(file);
    let roles = ["planner-lead", "builder", "verifier"];
    for i in 0..n {
        let event = Draft::new(roles[i % 3], Kind::AgentThoughtSummary)
            .body(format!(
                "step {i}: weighing the grid size against the timer"
            ))
            .into_event(
                generator.generate().unwrap().to_string(),
                "2026-11-30T10:00:00.000Z".into(),
                fixture.id(),
            );
        serde_json::to_writer(&mut out, &event).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

#[test]
fn a_100k_event_session_stays_usable_in_the_browser() {
    use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
    use chromiumoxide::page::ScreenshotParams;

    let exe = crate::support::chromium();
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    append_many(&fixture, 100_000);
    let server = Server::start(home.path());
    let id = fixture.id();
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &url).await;
        if !wait_in_page(
            &page,
            "document.querySelectorAll('.feed .ev').length > 0",
            Duration::from_secs(60),
        )
        .await
        {
            page_failure(&page, "the session view with its recent events").await;
        }
        let rows = page_text(&page, "String(document.querySelectorAll('.feed .ev').length)").await;
        assert!(rows.parse::<usize>().unwrap() <= 300, "the feed keeps a window, not the history: {rows}");
        page.evaluate("document.querySelector('[data-tab=Transcript]').click()").await.unwrap();
        if !wait_in_page(&page, "document.querySelectorAll('.tx-list .ev').length === 100", Duration::from_secs(20)).await {
            page_failure(&page, "the last transcript page").await;
        }
        assert!(page_text(&page, "document.querySelector('.tx-bar .muted').textContent").await.ends_with("of 100005"));
        page.evaluate("[...document.querySelectorAll('.tx-bar button')].find(b => b.textContent.includes('first')).click()").await.unwrap();
        if !wait_in_page(&page, "(document.querySelector('.tx-list .ev .ev-kind') || {}).textContent === 'goal'", Duration::from_secs(20)).await {
            page_failure(&page, "the first transcript page").await;
        }
        // Filtering by kind finds the one verdict among 100,000 events.
        page.evaluate("const k = document.querySelector('.tx-bar input'); k.value = 'judge.score'; k.dispatchEvent(new Event('change'))").await.unwrap();
        if !wait_in_page(&page, "document.querySelectorAll('.tx-list .ev').length === 1", Duration::from_secs(20)).await {
            page_failure(&page, "the kind filter").await;
        }
        page.evaluate("document.querySelector('.tx-list .ev').click(); document.querySelector('.tabs-card').scrollIntoView()").await.unwrap();
        let png = page
            .screenshot(ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).build())
            .await
            .expect("screenshot");
        std::fs::create_dir_all(artifact_dir()).unwrap();
        std::fs::write(artifact_dir().join("big-session.png"), &png).unwrap();
        chromium.shutdown().await;
    });
}
