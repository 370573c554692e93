//! `crumb batch` overhead per session over a plain `crumb run`, release build, whole processes:
//! 20 pitches on the mock (static QA) run one at a time as 20 `crumb run`s, then as one
//! `crumb batch --jobs 1`; the difference per session is what the batch adds (spawning the child,
//! reading its progress, recording the pitch, folding the session for the summary). Target ≤ 20 ms.
//!
//! Then 10 pitches on the shipped `pipelines/casual.yaml` with browser QA as one
//! `crumb batch --jobs 2` (each session its own Chromium): target ≤ 5 s whole process (issue 30).
//! Skipped without Chromium.
//!
//! Run with `cargo bench --bench batch`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

mod support;

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PITCHES: usize = 20;
const ROUNDS: usize = 3;
/// Pitches and rounds of the browser-checked batch.
const BROWSER_PITCHES: usize = 10;
const BROWSER_ROUNDS: usize = 3;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_crumb"));
    let (scratch, pipeline) = support::scratch_project(&root);
    let mut singles = Vec::new();
    let mut batches = Vec::new();
    for round in 0..ROUNDS {
        let pitches: Vec<String> = (0..PITCHES)
            .map(|i| format!("round {round} pitch {i}: a dodger"))
            .collect();
        let home = scratch.path().join(format!("home-run-{round}"));
        let started = Instant::now();
        for pitch in &pitches {
            let status = Command::new(&binary)
                .current_dir(scratch.path())
                .env("CRUMB_HOME", &home)
                .args(["run"])
                .arg(&pipeline)
                .arg(pitch)
                .args(["--adapter", "mock", "--json"])
                .stdout(Stdio::null())
                .status()
                .expect("run crumb");
            assert!(status.success(), "crumb run did not pass");
        }
        singles.push(started.elapsed() / u32::try_from(PITCHES).expect("small"));
        let file = scratch.path().join(format!("pitches-{round}.txt"));
        std::fs::write(&file, pitches.join("\n")).expect("pitches file");
        let home = scratch.path().join(format!("home-batch-{round}"));
        let started = Instant::now();
        let status = Command::new(&binary)
            .current_dir(scratch.path())
            .env("CRUMB_HOME", &home)
            .arg("batch")
            .arg(&pipeline)
            .arg(&file)
            .args(["--jobs", "1", "--adapter", "mock", "--json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run crumb batch");
        assert!(status.success(), "the batch did not pass");
        batches.push(started.elapsed() / u32::try_from(PITCHES).expect("small"));
    }
    singles.sort();
    batches.sort();
    let (single, batch) = (singles[ROUNDS / 2], batches[ROUNDS / 2]);
    let overhead = batch.saturating_sub(single);
    println!(
        "crumb run per session: median {:.1} ms; crumb batch --jobs 1 per session: median {:.1} ms; overhead {:.1} ms per session — {} the 20 ms target (n={ROUNDS} rounds of {PITCHES})",
        ms(single),
        ms(batch),
        ms(overhead),
        if overhead <= Duration::from_millis(20) {
            "within"
        } else {
            "OVER"
        }
    );
    report::conditions("before");
    browser_batch(&root, &binary, scratch.path());
    report::conditions("after");
}

/// 10 pitches, browser QA, `--jobs 2`: the whole batch's wall time, median of a few rounds.
fn browser_batch(root: &std::path::Path, binary: &std::path::Path, scratch: &std::path::Path) {
    if !["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .any(|p| std::path::Path::new(p).is_file())
    {
        println!(
            "crumb batch (browser QA): skipped — no Chromium (run scripts/ensure-chromium.sh)"
        );
        return;
    }
    let pipeline = root.join("pipelines/casual.yaml");
    let mut times = Vec::new();
    for round in 0..BROWSER_ROUNDS {
        let pitches: Vec<String> = (0..BROWSER_PITCHES)
            .map(|i| format!("60-second match-3, round {round} pitch {i}"))
            .collect();
        let file = scratch.join(format!("browser-pitches-{round}.txt"));
        std::fs::write(&file, pitches.join("\n")).expect("pitches file");
        let home = scratch.join(format!("home-browser-{round}"));
        let started = Instant::now();
        let status = Command::new(binary)
            .current_dir(root)
            .env("CRUMB_HOME", &home)
            .arg("batch")
            .arg(&pipeline)
            .arg(&file)
            .args(["--jobs", "2", "--adapter", "mock", "--json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run crumb batch");
        assert!(status.success(), "the browser batch did not pass");
        times.push(started.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    let target = Duration::from_secs(5);
    report::row(
        "`crumb batch --jobs 2`, 10 pitches on casual.yaml with browser QA, whole process",
        &report::ms(median),
        &format!(
            "min {}, max {}, {} runs; target ≤ {}",
            report::ms(times[0]),
            report::ms(times[times.len() - 1]),
            times.len(),
            report::ms(target)
        ),
    );
    println!(
        "crumb batch --jobs 2, 10 browser-checked pitches: median {:.0} ms (min {:.0}, max {:.0}) — {} the 5 s target",
        ms(median),
        ms(times[0]),
        ms(times[times.len() - 1]),
        if median <= target { "within" } else { "OVER" }
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
