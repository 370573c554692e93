//! Browser QA of the mock game, Chromium start included, as `crumb qa` runs it (a whole process:
//! compile the pipeline, serve, launch, boot, settle, screenshot, shut down and reap). Prints the
//! median wall time of the casual pipeline's QA, then the same with the mock planner's five
//! acceptance predicates (target: ≤ 1.5 s).
//!
//! Run with `cargo bench --bench qa`. Needs Chromium (`./scripts/ensure-chromium.sh`).
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const RUNS: usize = 7;
const PITCH: &str = "60-second match-3 with combo bonus";

fn qa_once(artifacts: &Path, out: &Path, ac: Option<&Path>) -> Duration {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crumb"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["qa", "pipelines/casual.yaml"])
        .arg(artifacts)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(ac) = ac {
        cmd.arg("--ac").arg(ac);
    }
    let started = Instant::now();
    let status = cmd.status().expect("spawn crumb qa");
    let elapsed = started.elapsed();
    assert!(
        status.success(),
        "crumb qa failed on the mock game (is Chromium installed?)"
    );
    elapsed
}

fn median(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let artifacts = dir.path().join("artifacts");
    for (rel, content) in crumb::adapters::mock::game::render(PITCH, 0) {
        let path = artifacts.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write game");
    }
    let (_, predicates) = crumb::adapters::mock::game::acceptance(PITCH);
    let ac = dir.path().join("ac.json");
    std::fs::write(&ac, serde_json::Value::Array(predicates).to_string())
        .expect("write predicates");
    let out = dir.path().join("qa");
    report::conditions("before");

    for (label, ac) in [
        ("browser QA of the mock game (casual, no predicates)", None),
        (
            "browser QA of the mock game + its 5 AC predicates",
            Some(ac.as_path()),
        ),
    ] {
        let _warm = qa_once(&artifacts, &out, ac);
        let samples: Vec<Duration> = (0..RUNS).map(|_| qa_once(&artifacts, &out, ac)).collect();
        let (mid, low, high) = median(samples);
        report::row(
            &format!("`crumb qa`: {label}, Chromium start included"),
            &report::ms(mid),
            &format!(
                "min {}, max {}, {RUNS} runs",
                report::ms(low),
                report::ms(high)
            ),
        );
        println!(
            "{label}: median {} ms (min {} ms, max {} ms, {RUNS} runs, Chromium start included)",
            mid.as_millis(),
            low.as_millis(),
            high.as_millis()
        );
    }
    report::conditions("after");
}
