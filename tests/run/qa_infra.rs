//! A session whose QA cannot run (Chromium will not start) is not failed or repaired: QA is
//! retried with backoff, then the session waits for a person naming the cause; `/redo` runs QA
//! again once the machine is fixed.

use super::{Scratch, count, of_kind, summary, transcript};
use crate::qa::infra::broken_chromium;
use crate::support::repo_root;

#[test]
fn qa_that_cannot_run_is_retried_then_awaits_a_person_and_never_repairs_the_build() {
    let scratch = Scratch::new();
    let pipeline = scratch.dir.path().join("pipelines/casual.yaml");
    std::fs::copy(repo_root().join("pipelines/casual.yaml"), &pipeline).unwrap();
    let fake = broken_chromium(scratch.dir.path());
    let run = scratch
        .command(&["run"])
        .env("CRUMB_CHROMIUM", &fake)
        .arg(&pipeline)
        .arg("60-second match-3 with combo bonus")
        .args(["--adapter", "mock", "--json"])
        .run()
        .expect_code(10);
    assert_eq!(summary(&run)["status"], "awaiting");
    let session = scratch.session();
    let events = transcript(&session);
    let results = of_kind(&events, "qa.result");
    // The first run and the casual pipeline's two default retries, each its own effect.
    assert_eq!(results.len(), 3, "{results:#?}");
    for (n, result) in results.iter().enumerate() {
        assert_eq!(result["data"]["status"], "error", "{result:#}");
        assert_eq!(result["data"]["exec_exit_code"], 3);
        let attempt = result["data"]
            .get("attempt")
            .and_then(serde_json::Value::as_u64);
        assert_eq!(attempt.unwrap_or(0), n as u64);
    }
    let awaiting = of_kind(&events, "session.awaiting");
    assert_eq!(awaiting.len(), 1);
    let body = awaiting[0]["body"].as_str().unwrap();
    assert!(
        body.starts_with("QA could not run (3 tries): boots, ac: Chromium exited before it was ready: simulated launch failure"),
        "{body}"
    );
    // No verdict, no repair: the builder ran once and the verifier never.
    assert_eq!(count(&events, "builder", "agent.wake"), 1);
    assert_eq!(count(&events, "verifier", "agent.wake"), 0);
    assert!(of_kind(&events, "judge.score").is_empty());
    assert!(of_kind(&events, "error").is_empty());

    // The machine is fixed (the real Chromium): /redo runs QA again and the build passes as is.
    crate::support::chromium();
    scratch.say(&session, "/redo");
    let resumed = scratch
        .command(&["resume", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    let events = transcript(&session);
    assert_eq!(count(&events, "builder", "agent.wake"), 1);
    assert_eq!(count(&events, "verifier", "agent.wake"), 1);
    let last_qa = of_kind(&events, "qa.result").pop().unwrap().clone();
    assert_eq!(last_qa["data"]["status"], "pass", "{last_qa:#}");
}

/// A browser-checked run: Chromium starts beside the build turn (`prestarted_ms`), and `--json`
/// says where the time went, down to the browser check's phases and each predicate.
#[test]
fn a_browser_checked_run_starts_chromium_beside_the_build_and_reports_its_time() {
    crate::support::chromium();
    let scratch = Scratch::new();
    let pipeline = scratch.dir.path().join("pipelines/casual.yaml");
    std::fs::copy(repo_root().join("pipelines/casual.yaml"), &pipeline).unwrap();
    let run = scratch
        .command(&["run"])
        .arg(&pipeline)
        .arg("60-second match-3 with combo bonus")
        .args(["--adapter", "mock", "--json"])
        .run()
        .expect_code(0);
    let summary = summary(&run);
    let qa = &summary["timings_ms"]["qa"][0];
    assert!(qa["browser_start_ms"].is_u64(), "{qa:#}");
    assert!(qa["shutdown_ms"].is_u64(), "{qa:#}");
    let boots = qa["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "boots")
        .unwrap();
    for phase in ["page_ms", "boot_ms", "settled_ms", "capture_ms"] {
        assert!(boots["phases"][phase].is_u64(), "{phase}: {boots:#}");
    }
    assert_eq!(qa["acceptance"].as_array().unwrap().len(), 5, "{qa:#}");
    let events = transcript(&scratch.session());
    let result = of_kind(&events, "qa.result")[0];
    assert_eq!(result["data"]["status"], "pass", "{result:#}");
    assert!(
        result["data"]["timings_ms"]["prestarted_ms"].is_u64(),
        "the browser was not started beside the build turn: {result:#}"
    );
    // Nothing of it is left: its record in the session's qa/ went with it.
    let left: Vec<_> = std::fs::read_dir(scratch.session().join("qa"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".pgid"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
