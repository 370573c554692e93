//! The story line in Studio: a crash-once PASS and a fail-once repair, run for real on the mock,
//! drawn under the banner one row per round from the server's fold — the same steps `crumb status
//! --json` tells, so the page and the terminal cannot disagree.

use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
use super::outcomes::{crumb_session, laptop, screen};
use super::*;

fn run(home: &Path, scenario: &str, pitch: &str) {
    crumb()
        .args([
            "run",
            "pipelines/casual.yaml",
            pitch,
            "--preset",
            "mock",
            "--mock-scenario",
            scenario,
        ])
        .env("CRUMB_HOME", home)
        .env("CRUMB_STUDIO_PORT", "1")
        .env("CRUMB_NO_OPEN", "1")
        .run()
        .expect_code(0);
}

/// Each round's step texts, as `crumb status --json` tells them.
fn status_steps(home: &Path, id: &str) -> Vec<Vec<String>> {
    let out = crumb()
        .args(["status", id, "--json"])
        .env("CRUMB_HOME", home)
        .run()
        .expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).unwrap();
    status["story"]["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["step"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn the_story_line_tells_each_round_and_agrees_with_status() {
    let exe = crate::support::chromium();
    let home = temp_home();
    run(home.path(), "crash-once", "a builder that crashes once");
    run(home.path(), "fail-once", "a build that needs a repair");
    let server = Server::start(home.path());
    let crashed = crumb_session(&server, "a builder that crashes once");
    let repaired = crumb_session(&server, "a build that needs a repair");
    for id in [&crashed, &repaired] {
        let session = server.get_json(&format!("/api/sessions/{id}"));
        let rounds = session["story"]["rounds"].as_array().unwrap();
        let steps = status_steps(home.path(), id);
        assert_eq!(
            rounds.len(),
            steps.len(),
            "{id}: same rounds as crumb status"
        );
        for (round, told) in rounds.iter().zip(&steps) {
            assert_eq!(
                round["steps"].as_array().unwrap().len(),
                told.len(),
                "{round}"
            );
        }
    }
    let base = format!("http://127.0.0.1:{}/", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &base).await;
        laptop(&page).await;
        page.evaluate(format!("location.hash = '#/session/{crashed}'")).await.unwrap();
        if !wait_in_page(&page, "document.querySelectorAll('#story .round[data-round]').length === 1 && !!document.querySelector('#story .step-incident')", Duration::from_secs(20)).await {
            page_failure(&page, "the crash-once story: one round with its failed turn").await;
        }
        screen(&page, "story").await;
        let row = page_text(&page, "document.querySelector('#story .round[data-round]').textContent").await;
        assert!(row.contains("builder failed: exit_nonzero") && row.contains("builder retried"), "{row}");
        // The graph is read at its natural size: every label at least 12 px on a 1280×720 screen.
        if !wait_in_page(&page, "!!document.querySelector('#graph svg .node text')", Duration::from_secs(20)).await {
            page_failure(&page, "the graph").await;
        }
        let smallest = page_text(&page, "(() => { const svg = document.querySelector('#graph svg'); const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width; return String(Math.min(...[...svg.querySelectorAll('.node text')].map(t => parseFloat(getComputedStyle(t).fontSize) * scale))); })()").await;
        assert!(smallest.parse::<f64>().unwrap() >= 12.0, "graph labels at {smallest} px");
        // A role's node opens its turns: the builder's crashed one and the one that built.
        page.evaluate("[...document.querySelectorAll('#graph .node.pickable')].find(n => n.querySelector('text').textContent === 'builder').dispatchEvent(new MouseEvent('click', { bubbles: true }))").await.unwrap();
        if !wait_in_page(&page, "!document.querySelector('#pane-Roles').hidden && !!document.querySelector('#pane-Roles .role.picked[data-role=\"builder\"]')", Duration::from_secs(10)).await {
            page_failure(&page, "the builder's node opens its turns").await;
        }
        screen(&page, "graph").await;
        let turns = page_text(&page, "[...document.querySelectorAll('#pane-Roles .role.picked .turn')].map(t => t.classList.contains('turn-failed') ? 'failed' : 'ok').join(',')").await;
        assert_eq!(turns, "failed,ok");
        // The waterfall draws the spans `crumb export --format chrome-trace` writes, lane by lane.
        let trace = crumb().args(["export", &crashed, "--format", "chrome-trace"]).env("CRUMB_HOME", home.path()).run().expect_code(0);
        let trace: Value = serde_json::from_str(&trace.stdout).unwrap();
        let spans = |cat: &str| trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X" && e["cat"] == cat).count();
        page.evaluate("document.querySelector('#tab-Time').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('#waterfall .lane') && !!document.querySelector('#role-costs tbody tr')", Duration::from_secs(20)).await {
            page_failure(&page, "the waterfall").await;
        }
        screen(&page, "waterfall").await;
        let drawn = page_text(&page, "[document.querySelectorAll('#waterfall .span-turn').length, document.querySelectorAll('#waterfall .span-qa').length].join(',')").await;
        assert_eq!(drawn, format!("{},{}", spans("turn"), spans("qa")));
        let failed = page_text(&page, "document.querySelector('#role-costs tr[data-role=\"builder\"] td:nth-child(3)').textContent").await;
        assert_eq!(failed, "1", "the crashed builder turn is counted as failed");
        page.evaluate(format!("location.hash = '#/session/{repaired}'")).await.unwrap();
        if !wait_in_page(&page, "document.querySelectorAll('#story .round[data-round]').length === 2", Duration::from_secs(20)).await {
            page_failure(&page, "the fail-once story: two rounds").await;
        }
        let first = page_text(&page, "document.querySelector('#story .round[data-round=\"1\"]').textContent").await;
        assert!(first.contains("→ FAIL") && first.contains("then builder (route)"), "{first}");
        // Corrections never push the scorecard past its card, and none hides behind "…".
        let fits = page_text(&page, "(() => { const card = document.querySelector('#scorecard'); const box = card.getBoundingClientRect(); const chips = [...card.querySelectorAll('.audit .chip')]; return String(chips.length >= 2 && card.scrollWidth <= card.clientWidth && chips.every(c => { const r = c.getBoundingClientRect(); return r.right <= box.right && r.width > 0; })); })()").await;
        assert_eq!(fits, "true", "the scorecard holds every correction");
        let second = page_text(&page, "document.querySelector('#story .round[data-round=\"2\"]').textContent").await;
        assert!(second.contains("corrected by"), "the guard that corrected R2: {second}");
        assert!(!page_text(&page, "document.querySelector('#story .step-incident') ? 'yes' : ''").await.contains("yes"), "a repair is not an incident");
        chromium.shutdown().await;
    });
    server.shutdown();
}
