//! A whole `crumb run` on the mock adapter, as a process, release build: the number a person feels
//! for the main job without an agent CLI.
//!
//! - static QA only (`tests/fixtures/run/casual-static.yaml`): target median ≤ 200 ms;
//! - the shipped `pipelines/casual.yaml` with browser QA (headless Chromium start, boot, input,
//!   screenshot, AC predicates): target median ≤ 1.0 s at load ≤ 2 (issue 30; the reference's mock
//!   run without a browser takes 2.0 s). Skipped when Chromium is not installed.
//!
//! Run with `cargo bench --bench run`; prints medians (and min/max) per variant.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const STATIC_RUNS: usize = 15;
const BROWSER_RUNS: usize = 5;
const PITCH: &str = "60-second match-3 with combo bonus";

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_crumb"));
    let scratch = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(scratch.path().join("pipelines")).expect("pipelines dir");
    std::fs::copy(
        root.join("tests/fixtures/run/casual-static.yaml"),
        scratch.path().join("pipelines/casual-static.yaml"),
    )
    .expect("copy the static pipeline");
    copy_dir(&root.join("templates"), &scratch.path().join("templates"));
    let home = scratch.path().join("home");
    report::conditions("before");

    let static_pipeline = scratch.path().join("pipelines/casual-static.yaml");
    run_once(&binary, scratch.path(), &static_pipeline, &home); // warm the page cache, not counted
    let times: Vec<Duration> = (0..STATIC_RUNS)
        .map(|_| run_once(&binary, scratch.path(), &static_pipeline, &home))
        .collect();
    report(
        "`crumb run` on mock, static QA only, whole process",
        times,
        Duration::from_millis(200),
    );

    if !chromium_installed() {
        println!(
            "crumb run (mock, browser QA): skipped — no Chromium (run scripts/ensure-chromium.sh)"
        );
        report::conditions("after");
        return;
    }
    let browser_pipeline = root.join("pipelines/casual.yaml");
    let times: Vec<Duration> = (0..BROWSER_RUNS)
        .map(|_| run_once(&binary, &root, &browser_pipeline, &home))
        .collect();
    report(
        "`crumb run pipelines/casual.yaml` on mock with browser QA (Chromium start included)",
        times,
        Duration::from_secs(1),
    );
    report::conditions("after");
}

fn run_once(binary: &Path, cwd: &Path, pipeline: &Path, home: &Path) -> Duration {
    let started = Instant::now();
    let status = Command::new(binary)
        .current_dir(cwd)
        .env("CRUMB_HOME", home)
        .env_remove("CRUMB_MOCK_DELAY_MS")
        .arg("run")
        .arg(pipeline)
        .arg(PITCH)
        .args(["--adapter", "mock", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .expect("run crumb");
    let elapsed = started.elapsed();
    assert!(
        status.success(),
        "crumb run did not end with PASS ({status})"
    );
    elapsed
}

fn report(name: &str, mut times: Vec<Duration>, target: Duration) {
    times.sort();
    let median = times[times.len() / 2];
    report::row(
        name,
        &report::ms(median),
        &format!(
            "min {}, max {}, {} runs; target ≤ {}",
            report::ms(times[0]),
            report::ms(times[times.len() - 1]),
            times.len(),
            report::ms(target)
        ),
    );
    let verdict = if median <= target { "within" } else { "OVER" };
    println!(
        "{name}: median {:.1} ms (min {:.1}, max {:.1}, n={}) — {verdict} the {} ms target",
        ms(median),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len(),
        target.as_millis()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn chromium_installed() -> bool {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .any(|p| Path::new(p).is_file())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy file");
        }
    }
}
