//! Replay throughput as people see it: the release `crumb replay` binary, as a whole process, on a
//! 1,000,000-event transcript. Prints the median wall time and the peak RSS over several runs.
//!
//! `cargo bench --bench replay` (the transcript is generated once under `target/bench-data/`).
//! Targets: ≤ 1.5 s and ≤ 50 MB.
//!
//! This shared machine's speed drifts by a factor of two or more from hour to hour, so the bench
//! also times a fixed single-threaded loop before and after: compare figures only together with it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(
    dead_code,
    reason = "the generator's own `main` and helpers are not used here"
)]
#[path = "../examples/gen_transcript.rs"]
mod gen_transcript;

const EVENTS: u64 = 1_000_000;
const RUNS: usize = 7;
/// Iterations of the fixed loop that gauges the machine's speed.
const GAUGE_ITERATIONS: u64 = 400_000_000;

fn main() {
    let transcript =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/transcript-1m.jsonl");
    if !transcript.is_file() {
        eprintln!("generating {EVENTS} events into {} …", transcript.display());
        gen_transcript::generate(EVENTS, &transcript).expect("write the benchmark transcript");
    }
    let size = std::fs::metadata(&transcript).map_or(0, |m| m.len());
    let gauge_before = gauge();
    let mut times = Vec::with_capacity(RUNS);
    let mut peaks = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (elapsed, peak_kb) = run_once(&transcript);
        times.push(elapsed);
        peaks.push(peak_kb);
    }
    let gauge_after = gauge();
    times.sort_unstable();
    peaks.sort_unstable();
    let median = times[RUNS / 2];
    let peak_max = peaks[RUNS - 1];
    println!(
        "replay {EVENTS} events ({:.0} MB): median {:.3} s (min {:.3} s, max {:.3} s), peak RSS {:.1} MB (median {:.1} MB) over {RUNS} runs",
        mb(size),
        median.as_secs_f64(),
        times[0].as_secs_f64(),
        times[RUNS - 1].as_secs_f64(),
        kb_to_mb(peak_max),
        kb_to_mb(peaks[RUNS / 2]),
    );
    println!(
        "machine gauge (fixed {GAUGE_ITERATIONS}-step loop, one thread): {:.3} s before, {:.3} s after",
        gauge_before.as_secs_f64(),
        gauge_after.as_secs_f64(),
    );
}

/// Time a fixed amount of single-threaded integer work.
fn gauge() -> Duration {
    let start = Instant::now();
    let mut x = 0u64;
    for i in 0..GAUGE_ITERATIONS {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    std::hint::black_box(x);
    start.elapsed()
}

/// Run `crumb replay` once; wall time and the highest `VmHWM` seen while it ran (kB).
fn run_once(transcript: &Path) -> (Duration, u64) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crumb"))
        .arg("replay")
        .arg(transcript)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn crumb replay");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(kb) = std::fs::read_to_string(&status_path)
            .ok()
            .as_deref()
            .and_then(vm_hwm_kb)
        {
            peak = peak.max(kb);
        }
        match child.try_wait().expect("wait for crumb replay") {
            Some(status) => {
                assert!(status.success(), "crumb replay failed: {status}");
                return (start.elapsed(), peak);
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// `VmHWM:   12345 kB` → 12345.
fn vm_hwm_kb(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[allow(clippy::cast_precision_loss, reason = "display only")]
fn kb_to_mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

#[allow(clippy::cast_precision_loss, reason = "display only")]
fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
