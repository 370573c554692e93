//! Infrastructure is not the build's fault: a browser that cannot start makes QA "could not run"
//! (status `error`), and concurrent browser QA on one machine shares a bounded pool of slots.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{CASUAL, assert_chromium, check, fixture};
use crate::support::{Running, crumb, repo_root};

/// An executable posing as Chromium that fails at once, as a browser that cannot start does.
pub fn broken_chromium(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("chromium");
    std::fs::write(
        &path,
        "#!/bin/sh\necho 'simulated launch failure: no display, no luck' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `crumb qa --json` of the casual pipeline on the fixture `game` with a Chromium that cannot
/// start; it always exits 1.
fn qa_without_a_browser(game: &str) -> Value {
    let scratch = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let run = crumb()
        .env("CRUMB_CHROMIUM", broken_chromium(scratch.path()))
        .env("CRUMB_HOME", scratch.path().join("home"))
        .args(["qa", CASUAL])
        .arg(fixture(game))
        .args(["--json", "--out"])
        .arg(out.path())
        .run()
        .expect_code(1);
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn a_browser_that_cannot_start_means_qa_could_not_run_not_that_the_game_failed() {
    let result = qa_without_a_browser("good");
    let data = &result["data"];
    assert_eq!(data["status"], "error", "{result:#}");
    assert_eq!(data["exec_exit_code"], 3);
    let why = data["error"].as_str().unwrap();
    assert!(
        why.starts_with("boots: Chromium exited before it was ready: simulated launch failure"),
        "{why}"
    );
    let boots = check(&result, "boots");
    assert_eq!(boots["status"], "unavailable");
    assert_eq!(boots["findings"][0]["code"], "browser_launch_failed");
    // The static checks ran and passed: a genuine failure there would have won.
    for id in ["entry", "size", "html"] {
        assert_eq!(check(&result, id)["status"], "pass", "{id}");
    }
    assert!(
        result["body"]
            .as_str()
            .unwrap()
            .starts_with("qa ERROR (could not run)")
    );
}

#[test]
fn a_genuine_failure_wins_over_a_check_that_could_not_run() {
    let result = qa_without_a_browser("missing-script");
    assert_eq!(result["data"]["status"], "fail", "{result:#}");
    assert_eq!(result["data"]["exec_exit_code"], 1);
    assert!(result["data"].get("error").is_none());
    assert_eq!(check(&result, "boots")["status"], "unavailable");
}

/// Four `crumb qa` processes at once on the mock game with two browser slots: every one passes,
/// each held a slot, and no more than two browsers ran at any moment.
#[test]
fn concurrent_qa_shares_a_bounded_pool_of_browser_slots_and_every_run_passes() {
    const RUNS: usize = 4;
    const SLOTS: usize = 2;
    assert_chromium();
    let scratch = tempfile::tempdir().unwrap();
    let game = scratch.path().join("game-root");
    let pitch = "60-second match-3 with combo bonus";
    for (rel, content) in crumb::adapters::mock::game::render(pitch, 0) {
        let path = game.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let (_criteria, predicates) = crumb::adapters::mock::game::acceptance(pitch);
    let ac = scratch.path().join("ac.json");
    std::fs::write(&ac, Value::Array(predicates).to_string()).unwrap();
    let home = scratch.path().join("home");
    let running: Vec<(Running, tempfile::TempDir)> = (0..RUNS)
        .map(|_| {
            let out = tempfile::tempdir().unwrap();
            let handle = crumb()
                .env("CRUMB_HOME", &home)
                .env("CRUMB_BROWSER_SLOTS", SLOTS.to_string())
                .arg("qa")
                .arg(repo_root().join(CASUAL))
                .arg(&game)
                .arg("--json")
                .arg("--out")
                .arg(out.path())
                .arg("--ac")
                .arg(&ac)
                .spawn();
            (handle, out)
        })
        .collect();
    let mut held: Vec<(u64, u64, u64)> = Vec::new();
    for (handle, _out) in running {
        let run = handle.wait();
        let result: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", run.stdout, run.stderr));
        assert_eq!(run.code, 0, "{result:#}\n{}", run.stderr);
        assert_eq!(result["data"]["status"], "pass");
        let slot = &result["data"]["browser_slot"];
        assert_eq!(slot["slots"], SLOTS, "{slot}");
        let index = slot["index"].as_u64().unwrap();
        assert!(index < SLOTS as u64, "{slot}");
        held.push((
            slot["acquired_at_ms"].as_u64().unwrap(),
            slot["released_at_ms"].as_u64().unwrap(),
            index,
        ));
    }
    // At every acquisition, count the runs holding a slot then: never more than the pool.
    for &(at, _, _) in &held {
        let at_once = held
            .iter()
            .filter(|&&(from, until, _)| from <= at && at < until)
            .count();
        assert!(at_once <= SLOTS, "{at_once} browsers at once: {held:?}");
    }
    assert!(
        home.join("run/browser-slot-0.lock").is_file(),
        "the slots live under $CRUMB_HOME/run"
    );
}

/// Chromium starts while the static checks run: a blocking command check that waits (bounded) for
/// the browser's process-group record in the output folder passes, and the report says where the
/// browser's time went.
#[test]
fn the_browser_starts_while_the_static_checks_run() {
    assert_chromium();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("qa");
    std::fs::create_dir_all(&out).unwrap();
    let wait = format!(
        "i=0; while [ $i -lt 300 ]; do for f in {}/browser-*.pgid; do [ -e \"$f\" ] && exit 0; done; \
         i=$((i+1)); sleep 0.05; done; exit 1",
        out.display()
    );
    let yaml = std::fs::read_to_string(repo_root().join(CASUAL))
        .unwrap()
        .replace(
            "    - id: boots\n",
            &format!(
                "    - {{ id: overlap, kind: command, argv: [sh, -c, {}] }}\n    - id: boots\n",
                serde_json::to_string(&wait).unwrap()
            ),
        );
    assert!(yaml.contains("id: overlap"));
    let pipeline = scratch.path().join("casual-overlap.yaml");
    std::fs::write(&pipeline, yaml).unwrap();
    let run = crumb()
        .env("CRUMB_HOME", scratch.path().join("home"))
        .arg("qa")
        .arg(&pipeline)
        .arg(fixture("good"))
        .args(["--json", "--out"])
        .arg(&out)
        .run();
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    run.expect_code(0);
    assert_eq!(check(&result, "overlap")["status"], "pass", "{result:#}");
    let timings = &result["data"]["timings_ms"];
    assert!(timings["browser_start_ms"].is_u64(), "{result:#}");
    assert!(timings["shutdown_ms"].is_u64(), "{result:#}");
    let phases = &check(&result, "boots")["details"]["timings_ms"];
    for phase in ["page_ms", "boot_ms", "settled_ms", "capture_ms"] {
        assert!(phases[phase].is_u64(), "{phase}: {result:#}");
    }
    // The record goes with the browser.
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".pgid"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Chromium's own temp folders (`org.chromium.Chromium.*`) go with the run: after a browser QA
/// run the temp folder crumb was given is as empty as before.
#[test]
fn browser_qa_leaves_nothing_in_the_temp_folder() {
    assert_chromium();
    let scratch = tempfile::tempdir().unwrap();
    let temp = scratch.path().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    crumb()
        .env("TMPDIR", &temp)
        .arg("qa")
        .arg(repo_root().join(CASUAL))
        .arg(fixture("good"))
        .args(["--json", "--out"])
        .arg(scratch.path().join("qa"))
        .run()
        .expect_code(0);
    let left: Vec<_> = std::fs::read_dir(&temp)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind in TMPDIR: {left:?}");
}
