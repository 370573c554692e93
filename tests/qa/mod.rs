//! Integration tests: execution QA through the real `crumb qa`, a real headless Chromium and the
//! game fixtures in `tests/fixtures/games/`. No stubs: when Chromium is missing these tests fail
//! and say how to install it (`./scripts/ensure-chromium.sh`), except the one that checks the
//! "unavailable" path on purpose.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Run, crumb, repo_root};

pub(crate) mod infra;
mod static_checks;
mod virtual_time;

const CASUAL: &str = "pipelines/casual.yaml";

/// Run `crumb qa --json` on `dir` with screenshots under a fresh temp folder.
fn qa_json(pipeline: &Path, dir: &Path, extra: &[&str]) -> (Run, Value, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let run = crumb()
        .arg("qa")
        .arg(pipeline)
        .arg(dir)
        .arg("--json")
        .arg("--out")
        .arg(out.path())
        .args(extra)
        .run();
    let value: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e})\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout, run.stderr
        )
    });
    (run, value, out)
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/games").join(name)
}

fn casual_on(name: &str) -> (Run, Value, tempfile::TempDir) {
    assert_chromium();
    qa_json(&repo_root().join(CASUAL), &fixture(name), &[])
}

/// These tests need a real browser, found the way `crumb qa` finds it; fail loudly with the fix
/// instead of silently skipping.
fn assert_chromium() {
    crate::support::chromium();
}

fn check<'a>(result: &'a Value, id: &str) -> &'a Value {
    result["data"]["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id} in {result:#}"))
}

fn finding_codes(check: &Value) -> BTreeSet<String> {
    check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

fn codes(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Replace what changes between runs (timings, pids, ports, paths, hashes of animated frames).
fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "runtime_ms" | "elapsed_ms" | "goto_ms" | "timings_ms" | "browser_pid"
                        | "browser" | "browsers_tested" | "browser_slot" => {
                            json!("[redacted]")
                        }
                        "screenshot" | "path"
                            if v.as_str().is_some_and(|s| {
                                Path::new(s).extension().is_some_and(|e| e == "png")
                            }) =>
                        {
                            json!("[png]")
                        }
                        "sha256" => json!("[sha256]"),
                        "distinct_colours" => json!(if v.as_u64().unwrap_or(0) > 1 {
                            "[many]"
                        } else {
                            "[one]"
                        }),
                        "body" => json!(
                            v.as_str()
                                .map(|s| s.split(" in ").next().unwrap_or("").to_owned())
                        ),
                        _ => redact(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// The screenshot the result references exists, is a PNG, and its sha256 is the recorded one.
fn assert_screenshot(result: &Value) {
    let artifact = &result["artifacts"][0];
    assert_eq!(artifact["role"], "screenshot", "{result:#}");
    let path = PathBuf::from(artifact["path"].as_str().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG"),
        "not a PNG: {}",
        path.display()
    );
    let digest = crumb_core::digest::sha256_hex(&bytes);
    assert_eq!(artifact["sha256"], digest);
    assert_eq!(result["data"]["screenshot"], artifact["path"]);
}

#[test]
fn good_game_passes_every_casual_check() {
    let (run, result, _out) = casual_on("good");
    let run = run.expect_code(0);
    assert!(
        run.stderr.is_empty() || !run.stderr.contains("panicked"),
        "{}",
        run.stderr
    );
    assert_eq!(result["kind"], "qa.result");
    assert_eq!(result["from"], "system");
    assert_eq!(result["metadata"]["tool"], "qa-check-effect@v1");
    assert_eq!(result["metadata"]["deterministic"], true);
    assert_eq!(result["data"]["exec_exit_code"], 0);
    assert_eq!(result["data"]["first_interaction"], "ok");
    assert_screenshot(&result);
    insta::assert_json_snapshot!("qa_good_game", redact(&result));
}

#[test]
fn console_error_fails_the_browser_check() {
    let (run, result, _out) = casual_on("console-error");
    run.expect_code(1);
    assert_eq!(result["data"]["exec_exit_code"], 1);
    let boots = check(&result, "boots");
    assert_eq!(boots["status"], "fail");
    assert_eq!(finding_codes(boots), codes(&["console_error"]));
    assert!(
        boots["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("level file is corrupt")
    );
    insta::assert_json_snapshot!("qa_console_error", redact(&result));
}

#[test]
fn uncaught_exception_fails_with_its_location() {
    let (run, result, _out) = casual_on("uncaught-exception");
    run.expect_code(1);
    let boots = check(&result, "boots");
    assert_eq!(finding_codes(boots), codes(&["page_error"]));
    let message = boots["findings"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("TypeError") && message.contains("/game/game.js:"),
        "{message}"
    );
    insta::assert_json_snapshot!("qa_uncaught_exception", redact(&result));
}

#[test]
fn missing_script_is_a_404_and_a_lint_finding() {
    let (run, result, _out) = casual_on("missing-script");
    run.expect_code(1);
    assert_eq!(
        finding_codes(check(&result, "boots")),
        codes(&["failed_request"])
    );
    assert!(
        check(&result, "boots")["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("404 /game/engine.js")
    );
    assert_eq!(
        finding_codes(check(&result, "html")),
        codes(&["script_not_found"])
    );
    insta::assert_json_snapshot!("qa_missing_script", redact(&result));
}

#[test]
fn a_page_without_canvas_fails() {
    let (run, result, _out) = casual_on("no-canvas");
    run.expect_code(1);
    assert_eq!(
        finding_codes(check(&result, "boots")),
        codes(&["selector_missing"])
    );
    insta::assert_json_snapshot!("qa_no_canvas", redact(&result));
}

#[test]
fn a_canvas_that_stays_blank_fails() {
    let (run, result, _out) = casual_on("blank-canvas");
    run.expect_code(1);
    assert_eq!(
        finding_codes(check(&result, "boots")),
        codes(&["blank_canvas"])
    );
    insta::assert_json_snapshot!("qa_blank_canvas", redact(&result));
}

#[test]
fn a_game_that_starts_on_a_key_passes_because_the_check_presses_it() {
    let (run, result, _out) = casual_on("needs-key");
    run.expect_code(0);
    let boots = check(&result, "boots");
    assert_eq!(boots["details"]["keys"], json!(["Space"]));
    assert_eq!(
        boots["details"]["canvas"]["distinct_colours"]
            .as_u64()
            .map(|n| n > 1),
        Some(true)
    );
}

#[test]
fn the_key_is_what_starts_it() {
    // The same fixture, with a pipeline that presses nothing: the canvas stays blank.
    assert_chromium();
    let dir = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(repo_root().join(CASUAL))
        .unwrap()
        .replace("keys: [Space]", "keys: []");
    let pipeline = dir.path().join("casual-no-keys.yaml");
    std::fs::write(&pipeline, yaml).unwrap();
    let (run, result, _out) = qa_json(&pipeline, &fixture("needs-key"), &[]);
    run.expect_code(1);
    assert_eq!(
        finding_codes(check(&result, "boots")),
        codes(&["blank_canvas"])
    );
}

#[test]
fn an_infinite_loop_ends_within_the_timeout_and_leaves_no_chromium() {
    let (run, result, _out) = casual_on("infinite-loop");
    run.expect_code(1);
    let boots = check(&result, "boots");
    assert!(
        finding_codes(boots).contains("main_thread_blocked"),
        "{boots:#}"
    );
    assert_eq!(result["data"]["timed_out"], false);
    let pgid = boots["details"]["browser_pid"]
        .as_i64()
        .expect("browser pid recorded");
    let leftovers = processes_in_group(pgid);
    assert!(
        leftovers.is_empty(),
        "Chromium processes left in group {pgid}: {leftovers:?}"
    );
}

#[test]
fn a_request_to_another_host_is_blocked_and_reported() {
    let (run, result, _out) = casual_on("external-request");
    run.expect_code(1);
    let boots = check(&result, "boots");
    assert_eq!(finding_codes(boots), codes(&["blocked_request"]));
    let blocked: Vec<&str> = boots["details"]["signals"]["blocked_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        blocked.contains(&"https://tracker.example.com/collect?game=1"),
        "{blocked:?}"
    );
    assert!(
        blocked.contains(&"http://203.0.113.7/pixel.gif"),
        "{blocked:?}"
    );
    insta::assert_json_snapshot!("qa_external_request", redact(&result));
}

#[test]
fn ac_predicates_pass_fail_and_throw() {
    assert_chromium();
    let dir = tempfile::tempdir().unwrap();
    let ac = dir.path().join("ac.json");
    std::fs::write(
        &ac,
        json!({ "ac_predicates": [
            { "id": "AC-pass", "intent": "score goes up on Space", "action": "document.dispatchEvent(new KeyboardEvent('keydown', { key: ' ', bubbles: true }))", "predicate": "window.__game.score > 1" },
            { "id": "AC-fail", "intent": "an impossible score", "predicate": "window.__game.score > 1000000", "timeout_ms": 400 },
            { "id": "AC-throw", "intent": "reads something missing", "predicate": "window.__game.missing.deeper === 1" }
        ]})
        .to_string(),
    )
    .unwrap();
    let (run, result, _out) = qa_json(
        &repo_root().join(CASUAL),
        &fixture("good"),
        &["--ac", ac.to_str().unwrap()],
    );
    run.expect_code(1);
    let acs = result["data"]["ac_results"].as_array().unwrap();
    let status = |id: &str| {
        acs.iter()
            .find(|a| a["ac_id"] == id)
            .map(|a| {
                (
                    a["status"].clone(),
                    a["reason"].as_str().unwrap().to_owned(),
                )
            })
            .unwrap()
    };
    assert_eq!(status("AC-pass").0, "PASS");
    let (s, reason) = status("AC-fail");
    assert_eq!(s, "FAIL");
    assert!(reason.contains("still falsy"), "{reason}");
    let (s, reason) = status("AC-throw");
    assert_eq!(s, "FAIL");
    assert!(
        reason.contains("threw") && reason.contains("TypeError"),
        "{reason}"
    );
    assert_eq!(result["data"]["ac_pass_count"], 1);
    assert_eq!(result["data"]["ac_total"], 3);
    assert_eq!(check(&result, "ac")["status"], "fail");
    assert_eq!(check(&result, "boots")["status"], "pass");
}

/// A predicate that does not pass in the shared page runs again in a fresh browser context, which
/// sees nothing another context stored: `AC-clean` fails in the shared page (where `AC-store` wrote
/// localStorage and a cookie) and passes in its own context.
#[test]
fn a_fresh_context_sees_no_storage_of_another() {
    assert_chromium();
    let dir = tempfile::tempdir().unwrap();
    let ac = dir.path().join("ac.json");
    std::fs::write(
        &ac,
        json!({ "ac_predicates": [
            { "id": "AC-store", "intent": "stores something", "timeout_ms": 100,
              "action": "localStorage.setItem('mark', '1'); document.cookie = 'mark=1; path=/'",
              "predicate": "false" },
            { "id": "AC-clean", "intent": "sees nothing stored",
              "predicate": "localStorage.getItem('mark') === null && !document.cookie.includes('mark=')",
              "timeout_ms": 100 }
        ]})
        .to_string(),
    )
    .unwrap();
    let (_run, result, _out) = qa_json(
        &repo_root().join(CASUAL),
        &fixture("good"),
        &["--ac", ac.to_str().unwrap()],
    );
    let acs = result["data"]["ac_results"].as_array().unwrap();
    let status = |id: &str| acs.iter().find(|a| a["ac_id"] == id).unwrap()["status"].clone();
    assert_eq!(status("AC-store"), "FAIL", "{acs:#?}");
    assert_eq!(status("AC-clean"), "PASS", "{acs:#?}");
}

/// No browser is the machine's problem, not the game's: QA could not run (status `error`,
/// exit code 3, the cause in `data.error`), which the engine retries instead of failing the
/// build — and it is still never a pass.
#[test]
fn without_chromium_the_browser_checks_are_unavailable_never_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let ac = dir.path().join("ac.json");
    std::fs::write(&ac, r#"[{"id": "AC1", "predicate": "true"}]"#).unwrap();
    let out = tempfile::tempdir().unwrap();
    let run = crumb()
        .env("CRUMB_CHROMIUM", "/nonexistent/chromium")
        .args(["qa", CASUAL])
        .arg(fixture("good"))
        .args(["--json", "--out"])
        .arg(out.path())
        .arg("--ac")
        .arg(&ac)
        .run()
        .expect_code(1);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["data"]["exec_exit_code"], 3);
    assert_eq!(result["data"]["status"], "error");
    let why = result["data"]["error"].as_str().unwrap();
    assert!(
        why.starts_with("boots, ac: CRUMB_CHROMIUM=/nonexistent/chromium"),
        "{why}"
    );
    assert_eq!(result["data"]["first_interaction"], "unavailable");
    let boots = check(&result, "boots");
    assert_eq!(boots["status"], "unavailable");
    assert!(
        boots["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("apt-get install chromium")
    );
    assert_eq!(check(&result, "ac")["status"], "unavailable");
    assert_eq!(result["data"]["ac_results"][0]["status"], "SKIP");
    assert!(result["artifacts"].is_null() || result["artifacts"].as_array().unwrap().is_empty());
}

/// The mock builder's game for `pitch` passes every check of the casual pipeline with the mock
/// planner's own predicates.
fn mock_game_passes_casual_qa(pitch: &str) {
    assert_chromium();
    let dir = tempfile::tempdir().unwrap();
    for (rel, content) in crumb::adapters::mock::game::render(pitch, 0) {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let (_criteria, predicates) = crumb::adapters::mock::game::acceptance(pitch);
    let ac = dir.path().join("ac.json");
    std::fs::write(&ac, Value::Array(predicates).to_string()).unwrap();
    let (run, result, _out) = qa_json(
        &repo_root().join(CASUAL),
        dir.path(),
        &["--ac", ac.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{pitch}: {result:#}");
    let acs = result["data"]["ac_results"].as_array().unwrap();
    assert_eq!(acs.len(), 5);
    assert!(
        acs.iter().all(|a| a["status"] == "PASS"),
        "{pitch}: {acs:#?}"
    );
    assert_screenshot(&result);
}

#[test]
fn the_mock_match3_game_passes_casual_qa() {
    mock_game_passes_casual_qa("60-second match-3 with combo bonus");
}

#[test]
fn the_mock_dodger_game_passes_casual_qa() {
    mock_game_passes_casual_qa("30 second asteroid dodge");
}

#[test]
fn the_mock_tapper_game_passes_casual_qa() {
    mock_game_passes_casual_qa("whack-a-mole clicker");
}

#[test]
fn usage_errors_exit_2() {
    crumb()
        .args(["qa", CASUAL, "/nonexistent/folder"])
        .run()
        .expect_code(2);
    crumb()
        .args(["qa", "/nonexistent/pipeline.yaml", "."])
        .run()
        .expect_code(2);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("ac.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let run = crumb()
        .args(["qa", CASUAL])
        .arg(fixture("good"))
        .arg("--ac")
        .arg(&bad)
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("not JSON"), "{}", run.stderr);
}

/// Pids (live or zombie) whose process group is `pgid`.
fn processes_in_group(pgid: i64) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<i64>().ok()) == Some(pgid) {
            found.push(stat[..=close].to_owned());
        }
    }
    found
}

/// chromiumoxide silently drops flags written with dashes; ours are our own argv, and this reads
/// them back from the live browser's command line (the network containment depends on them).
#[test]
fn the_browser_really_runs_with_the_containment_flags() {
    assert_chromium();
    let exe = crate::support::chromium();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let chromium = crumb::qa::browser::launch::Chromium::launch(&exe)
            .await
            .expect("launch");
        let pid = chromium.pid().expect("pid");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        for flag in [
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE *.localhost",
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=127.0.0.1",
            "--webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
        ] {
            assert!(
                args.iter().any(|a| a == flag),
                "{flag} missing from {args:?}"
            );
        }
        assert!(args.iter().any(|a| a.starts_with("--headless")), "{args:?}");
        chromium.shutdown().await;
        let running: Vec<String> = processes_in_group(i64::from(pid))
            .into_iter()
            .filter(|p| {
                let pid = p.split_whitespace().next().unwrap_or_default();
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| s.rsplit(')').next().and_then(|r| r.trim().chars().next()))
                    .is_some_and(|state| state != 'Z')
            })
            .collect();
        assert!(
            running.is_empty(),
            "still running after shutdown: {running:?}"
        );
    });
}

/// `qa.timeout` shorter than the page's hang: the run stops at its deadline, the browser's whole
/// process group is killed and reaped, and a failing result is still produced.
#[test]
fn a_run_timeout_kills_the_browser_and_still_reports() {
    assert_chromium();
    let dir = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(repo_root().join(CASUAL))
        .unwrap()
        .replace("timeout: 120s", "timeout: 3s");
    let pipeline = dir.path().join("casual-3s.yaml");
    std::fs::write(&pipeline, yaml).unwrap();
    let (run, result, _out) = qa_json(&pipeline, &fixture("infinite-loop"), &[]);
    run.expect_code(1);
    assert_eq!(result["data"]["timed_out"], true);
    assert_eq!(result["data"]["exec_exit_code"], 2);
    assert_eq!(check(&result, "boots")["status"], "timeout");
    assert_eq!(check(&result, "entry")["status"], "pass");
    let pgid = result["data"]["browser_pid"]
        .as_i64()
        .expect("browser pid recorded");
    let leftovers = processes_in_group(pgid);
    assert!(
        leftovers.is_empty(),
        "Chromium processes left in group {pgid}: {leftovers:?}"
    );
}
