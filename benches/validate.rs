//! `crumb validate pipelines/casual.yaml` as a whole process, release build: the number people
//! feel in CI and pre-commit hooks. Target: median ≤ 20 ms on a 2-core machine.
//!
//! Run with `cargo bench --bench validate`. Benches are not told where the `crumb` binary is, so
//! this program builds `target/release/crumb` itself (`cargo build --release`) when it is missing
//! or older than the sources, then times N runs and prints medians. It also times the in-process
//! compile alone, to show how much of the total is process start-up.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crumb::pipeline::compile::{CompileOptions, compile_file};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const RUNS: usize = 50;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let binary = root.join("target/release/crumb");
    ensure_release_binary(&root, &binary);
    let pipeline = root.join("pipelines/casual.yaml");
    report::conditions("before");

    // Warm the page cache once; not counted.
    run_validate(&binary, &root, &pipeline);
    let process: Vec<Duration> = (0..RUNS)
        .map(|_| run_validate(&binary, &root, &pipeline))
        .collect();
    report(
        "crumb validate pipelines/casual.yaml (whole process)",
        process,
    );

    let options = CompileOptions::default();
    let in_process: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let compiled = compile_file(&pipeline, &options, &crumb::fs::real_files());
            assert!(compiled.table.is_some(), "casual.yaml must compile");
            start.elapsed()
        })
        .collect();
    report(
        "compile_file(casual.yaml) in process, templates included",
        in_process,
    );
    report::conditions("after");
}

fn run_validate(binary: &Path, root: &Path, pipeline: &Path) -> Duration {
    let start = Instant::now();
    let status = Command::new(binary)
        .arg("validate")
        .arg(pipeline)
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run crumb");
    let elapsed = start.elapsed();
    assert!(status.success(), "crumb validate failed: {status}");
    elapsed
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((samples.len() - 1) as f64 * q).round() as usize;
        samples[index].as_secs_f64() * 1000.0
    };
    report::row(
        &format!("`crumb validate`: {name}"),
        &format!("{:.2} ms", at(0.5)),
        &format!(
            "min {:.2} ms, p90 {:.2} ms, {} runs",
            at(0.0),
            at(0.9),
            samples.len()
        ),
    );
    println!(
        "{name}: median {:.2} ms (min {:.2}, p90 {:.2}, n={})",
        at(0.5),
        at(0.0),
        at(0.9),
        samples.len()
    );
}

/// Build the release binary if it is missing or older than any source file.
fn ensure_release_binary(root: &Path, binary: &Path) {
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok();
    let stale =
        built.is_none_or(|built| newest_source(&root.join("src")).is_some_and(|src| src > built));
    if stale {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "--bin", "crumb"])
            .current_dir(root)
            .status()
            .expect("run cargo build --release");
        assert!(status.success(), "cargo build --release failed");
    }
}

fn newest_source(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest_source(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).ok()
        };
        newest = newest.max(time);
    }
    newest
}
