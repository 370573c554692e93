//! A person can finish what they start and the page survives what the server sends: approve then
//! Resume from the page to the end, a bad transcript line (and generated events fed to every
//! render function), a Studio restart with the page open, and a game that uses `localStorage`,
//! cookies and `fetch()` of its own files in the preview.

use super::browser::{browser_runtime, open_studio, page_failure, page_text, wait_in_page};
use super::outcomes::{crumb_session, laptop};
use super::*;

#[test]
fn approve_then_resume_from_the_page_to_the_end() {
    let exe = crate::support::chromium();
    let home = temp_home();
    let goal = "neon match-3 started from the command line";
    // Started from the CLI without --wait: it stops at the PARTIAL verdict with nobody running it.
    crumb()
        .args([
            "run",
            "pipelines/casual.yaml",
            goal,
            "--preset",
            "mock",
            "--mock-scenario",
            "partial",
        ])
        .env("CRUMB_HOME", home.path())
        .env("CRUMB_NO_OPEN", "1")
        .run()
        .expect_code(10);
    let server = Server::start(home.path());
    let id = crumb_session(&server, goal);
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &url).await;
        laptop(&page).await;
        if !wait_in_page(&page, "!!document.querySelector('#outcome.outcome-waiting') && !!document.querySelector('#approve') && !!document.querySelector('#resume')", Duration::from_secs(20)).await {
            page_failure(&page, "a waiting session with Approve and Resume").await;
        }
        assert!(page_text(&page, "document.querySelector('#outcome').textContent").await.contains("then Resume"));
        page.evaluate("document.querySelector('#approve').click()").await.unwrap();
        if !wait_in_page(&page, "(document.querySelector('.sent .ack') || {}).textContent?.includes('press Resume')", Duration::from_secs(10)).await {
            page_failure(&page, "the answer to /approve says what happens next").await;
        }
        assert!(page_text(&page, "document.querySelector('.sent .ack').textContent").await.contains(&format!("crumb resume {id}")));
        page.evaluate("document.querySelector('#resume').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('#outcome.outcome-passed') && !!document.querySelector('.sent .ack.good')", Duration::from_secs(60)).await {
            page_failure(&page, "Resume applies the approval and the session passes").await;
        }
        let banner = page_text(&page, "document.querySelector('#outcome').textContent").await;
        assert!(banner.contains("approved by a person") && banner.contains("PARTIAL"), "{banner}");
        assert_eq!(page_text(&page, "String(document.querySelector('#command').disabled)").await, "true");
        assert!(page_text(&page, "document.querySelector('#spend').textContent").await.contains("waiting for you"));
        chromium.shutdown().await;
    });
    let state = server.get_json(&format!("/api/sessions/{id}"));
    assert_eq!(state["state"]["done"]["reason"], "approved");
    assert!(
        state["time"]["waiting_ms"].as_i64().unwrap() > 0,
        "{}",
        state["time"]
    );
    assert!(
        state["time"]["working_ms"].as_i64().unwrap()
            < state["time"]["elapsed_ms"].as_i64().unwrap()
    );
}

/// Generated events, graphs, scorecards and budgets for every render function, in the page: a
/// seeded generator of any JSON (nulls, numbers, strings, arrays, objects) in every field.
const PROPERTY_PROBE: &str = r"(async () => {
  const feed = await import('/assets/feed.js');
  const outcome = await import('/assets/outcome.js');
  const graph = await import('/assets/graph.js');
  const panels = await import('/assets/panels.js');
  let seed = 15;
  const rnd = n => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const kinds = ['done', 'judge.score', 'qa.result', 'agent.stop', 'agent.wake', 'user.approve', 'ack', 'build', 'audit', 'error', 'x.y'];
  const any = depth => {
    switch (rnd(depth > 2 ? 5 : 8)) {
      case 0: return null;
      case 1: return rnd(1000) - 500 + rnd(100) / 7;
      case 2: return ['', 'abc', 'circuit_open:builder', '\u0000', 'NaN', '2026-99-99'][rnd(6)];
      case 3: return rnd(2) === 0;
      case 4: return undefined;
      case 5: return Array.from({ length: rnd(4) }, () => any(depth + 1));
      default: { const o = {}; for (let i = rnd(5); i > 0; i--) o[['kind', 'id', 'path', 'reason', 'outcome', 'verdict', 'scores', 'data', 'key', 'from', 'to', 'label', 'count', 'nodes', 'edges', 'stop'][rnd(16)]] = any(depth + 1); return o; }
    }
  };
  const event = () => {
    const e = {};
    for (const k of ['id', 'ts', 'from', 'kind', 'body', 'data', 'scores', 'metadata', 'artifacts']) if (rnd(3)) e[k] = any(0);
    if (rnd(2)) e.kind = kinds[rnd(kinds.length)];
    return e;
  };
  const el = document.createElement('div');
  const f = new feed.Feed(el, null);
  let failures = [];
  for (let i = 0; i < 400; i++) {
    const e = rnd(5) === 0 ? any(0) : event();
    const tries = [
      () => feed.row(i, e, null), () => f.add(i, e), () => feed.summary(e),
      () => outcome.outcomeBanner(any(0)), () => outcome.outcomePill(e), () => outcome.markPills(any(0)), () => outcome.reasonLabel(any(0)),
      () => graph.drawGraph(document.createElement('div'), rnd(2) ? any(0) : { nodes: any(1), edges: any(1), current: any(1), stop: any(1) }),
      () => panels.drawScorecard(document.createElement('div'), rnd(2) ? any(0) : { dimensions: any(1), aggregate: any(1), corrections: any(1) }, any(0), any(0)),
      () => panels.drawBudgets(document.createElement('div'), rnd(2) ? any(0) : { pipeline: { limits: any(1) }, state: any(1), time: any(1), cost: any(1) }),
    ];
    for (const t of tries) { try { t(); } catch (err) { failures.push(String(err && err.stack || err).slice(0, 300)); } }
  }
  return JSON.stringify(failures.slice(0, 5));
})()";

#[test]
fn a_bad_transcript_line_and_generated_events_never_blind_the_view() {
    let exe = crate::support::chromium();
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([4.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    let server = Server::start(home.path());
    let id = fixture.id();
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &url).await;
        if !wait_in_page(&page, "!!document.querySelector('#outcome.outcome-waiting') && !!document.querySelector('#graph svg') && document.querySelector('.conn').classList.contains('on')", Duration::from_secs(20)).await {
            page_failure(&page, "the session view").await;
        }
        // The line of the issue: `artifacts` a string, not a list.
        let bad = json!({
            "id": ulid::Ulid::new().to_string(), "ts": "2026-12-01T05:00:00Z", "session_id": id,
            "from": "builder", "kind": "note", "artifacts": "abc", "data": { "inbox_offset": 9 }
        });
        let mut file = std::fs::OpenOptions::new().append(true).open(fixture.session.dir.transcript()).unwrap();
        writeln!(file, "{bad}").unwrap();
        drop(file);
        fixture.note("after the bad line");
        if !wait_in_page(&page, "[...document.querySelectorAll('#feed .ev-body')].some(b => b.textContent.includes('after the bad line'))", Duration::from_secs(20)).await {
            page_failure(&page, "the live feed goes on after the bad line").await;
        }
        assert_eq!(page_text(&page, "String(document.querySelectorAll('#alerts .alert').length)").await, "0", "no alert for data the page can draw");
        assert_eq!(page_text(&page, "String(!!document.querySelector('#graph svg'))").await, "true");
        assert!(!page_text(&page, "document.querySelector('#feed').textContent").await.contains("inbox_offset"), "bookkeeping is not a row");
        let failures = page_text(&page, PROPERTY_PROBE).await;
        assert_eq!(failures, "[]", "render functions threw on generated input");
        // Anything unexpected still gets a banner.
        page.evaluate("window.dispatchEvent(new ErrorEvent('error', { message: 'boom from a test' })); window.dispatchEvent(new PromiseRejectionEvent('unhandledrejection', { promise: Promise.resolve(), reason: new Error('rejected in a test') }))").await.unwrap();
        if !wait_in_page(&page, "document.querySelector('#alerts').textContent.includes('boom from a test') && document.querySelector('#alerts').textContent.includes('rejected in a test')", Duration::from_secs(10)).await {
            page_failure(&page, "the global error banner").await;
        }
        chromium.shutdown().await;
    });
}

#[test]
fn a_studio_restart_with_the_page_open_says_reload() {
    let exe = crate::support::chromium();
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([4.0, 5.0, 3.0, 3.0, 3.0, 3.0], Verdict::Partial);
    let server = Server::start(home.path());
    let port = server.addr.port();
    let id = fixture.id();
    let url = format!("http://127.0.0.1:{port}/#/session/{id}");
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &url).await;
        if !wait_in_page(&page, "!!document.querySelector('#outcome') && document.querySelector('.conn').classList.contains('on')", Duration::from_secs(20)).await {
            page_failure(&page, "the session view, connected").await;
        }
        server.shutdown();
        let again = Server::start_at(home.path(), port, |_| {});
        if !wait_in_page(&page, "!!document.querySelector('#restarted')", Duration::from_secs(30)).await {
            page_failure(&page, "the restart banner").await;
        }
        assert!(page_text(&page, "document.querySelector('#restarted').textContent").await.contains("reload"));
        // Reloading takes the new token and preview origin: a line goes through again.
        page.evaluate("location.reload()").await.unwrap();
        if !wait_in_page(&page, "!!document.querySelector('#outcome.outcome-waiting') && !document.querySelector('#restarted')", Duration::from_secs(20)).await {
            page_failure(&page, "the reloaded page").await;
        }
        page.evaluate("document.querySelector('#command').value = '/note after the restart'; document.querySelector('form.command').requestSubmit()").await.unwrap();
        let inbox = fixture.session.dir.inbox();
        let reached = crate::support::eventually_async(Duration::from_secs(10), || async {
            std::fs::read_to_string(&inbox).unwrap_or_default().contains("/note after the restart").then_some(())
        })
        .await;
        assert!(reached.is_some(), "the reloaded page writes with the new token");
        drop(again);
        chromium.shutdown().await;
    });
}

/// A game that keeps its best score in `localStorage`, sets a cookie and fetches its own level
/// file, then reports to Studio.
const STORAGE_GAME: &str = r"<!doctype html><body><script>
(async () => {
  const out = {};
  try { localStorage.setItem('best', '42'); out.storage = localStorage.getItem('best'); } catch (e) { out.storage = 'threw: ' + e.name; }
  try { document.cookie = 'seen=1'; out.cookie = document.cookie.includes('seen=1') ? 'ok' : 'missing'; } catch (e) { out.cookie = 'threw: ' + e.name; }
  try { out.level = (await (await fetch('level.json')).json()).level; } catch (e) { out.level = 'threw: ' + e.message; }
  try { await fetch(location.href.replace(/^http:\/\/[^.]+/, 'http://01aaaaaaaaaaaaaaaaaaaaaaaa')); out.other = 'reached'; } catch (e) { out.other = 'refused'; }
  parent.postMessage(JSON.stringify(out), '*');
})();
</script></body>";

#[test]
fn an_ordinary_game_with_storage_cookies_and_fetch_runs_in_the_preview() {
    let exe = crate::support::chromium();
    let home = temp_home();
    let mut fixture = Fixture::new(home.path());
    fixture.run_to_verdict([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], Verdict::Pass);
    std::fs::write(
        fixture.dir().join("artifacts/game/index.html"),
        STORAGE_GAME,
    )
    .unwrap();
    std::fs::write(
        fixture.dir().join("artifacts/game/level.json"),
        r#"{"level": 3}"#,
    )
    .unwrap();
    let server = Server::start(home.path());
    let id = fixture.id();
    let url = format!("http://127.0.0.1:{}/#/session/{id}", server.addr.port());
    browser_runtime().block_on(async {
        let (chromium, page) = open_studio(&exe, &url).await;
        if !wait_in_page(&page, "!!document.querySelector('#outcome')", Duration::from_secs(20)).await {
            page_failure(&page, "the session view").await;
        }
        page.evaluate("window.addEventListener('message', e => { document.body.dataset.game = e.data; }); document.querySelector('[data-tab=Artifacts]').click()").await.unwrap();
        if !wait_in_page(&page, "!!document.body.dataset.game", Duration::from_secs(20)).await {
            page_failure(&page, "the game reports from the preview").await;
        }
        let report: Value = serde_json::from_str(&page_text(&page, "document.body.dataset.game").await).unwrap();
        assert_eq!(report["storage"], "42", "{report}");
        assert_eq!(report["level"], 3, "{report}");
        assert_eq!(report["other"], "refused", "another session's origin is out of reach: {report}");
        // In the frame a cookie is a third-party one (Chromium drops it, nothing throws); opened
        // at the top ("open ↗") the game is first-party on its own origin and keeps it.
        assert!(!report["cookie"].as_str().unwrap_or("threw").starts_with("threw"), "{report}");
        let top = page_text(&page, "document.querySelector('iframe.game').src").await;
        page.evaluate("window.addEventListener('message', e => { document.body.dataset.game = e.data; })").await.unwrap();
        page.goto(top.as_str()).await.expect("open the game at the top");
        if !wait_in_page(&page, "document.cookie.includes('seen=1') && localStorage.getItem('best') === '42'", Duration::from_secs(10)).await {
            page_failure(&page, "the game at the top keeps its cookie and storage").await;
        }
        chromium.shutdown().await;
    });
}
