//! Replay throughput as people see it: the release `crumb replay` binary, as a whole process, on
//! transcripts of 100,000 and 1,000,000 events from two generators — the project's own
//! (`examples/gen_transcript.rs`, about half cheap `tool.call` lines) and one shaped like the
//! reference's logs (`support/reference_transcript.rs`, its mock session cycled, 347 MB a
//! million). Prints the median wall time, CPU time and peak RSS over several runs.
//!
//! `cargo bench --bench replay`. The transcripts are generated once per run in a temp dir and
//! deleted after. `CRUMB_BENCH_REPLAY_MAX=10000000` adds the 3M and 10M cases (linearity; needs
//! about 4 GB of free disk). Targets: 1M reference-shaped events ≤ 0.8 s and ≤ 30 MB.
//!
//! This shared machine's speed drifts by a factor of two or more from hour to hour, so the bench
//! also times a fixed single-threaded loop before and after: compare figures only together with it.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(
    dead_code,
    reason = "the generator's own `main` and helpers are not used here"
)]
#[path = "../examples/gen_transcript.rs"]
mod gen_transcript;
#[path = "support/reference_transcript.rs"]
mod reference_transcript;
#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const RUNS: usize = 5;

fn main() {
    let dir = tempfile::Builder::new()
        .prefix("crumb-bench-replay-")
        .tempdir()
        .expect("temp dir");
    let max: u64 = std::env::var("CRUMB_BENCH_REPLAY_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let sizes: Vec<u64> = [100_000, 1_000_000, 3_000_000, 10_000_000]
        .into_iter()
        .filter(|&n| n <= max)
        .collect();
    report::conditions("before");
    for (generator, name) in [
        (Generator::Reference, "reference-shaped"),
        (Generator::Own, "own"),
    ] {
        for &events in &sizes {
            let path = dir.path().join(format!("{name}-{events}.jsonl"));
            generator.write(events, &path);
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            let runs = if events > 1_000_000 { 3 } else { RUNS };
            let mut walls = Vec::with_capacity(runs);
            let mut cpus = Vec::with_capacity(runs);
            let mut peaks = Vec::with_capacity(runs);
            // Neither generator records a pipeline: replay is told which.
            let extra = [
                "--pipeline".to_owned(),
                concat!(env!("CARGO_MANIFEST_DIR"), "/pipelines/casual.yaml").to_owned(),
            ];
            let _warm = run_once(&path, &extra);
            for _ in 0..runs {
                let (wall, cpu, peak_kb) = run_once(&path, &extra);
                walls.push(wall);
                cpus.push(cpu);
                peaks.push(peak_kb);
            }
            let (wall, low, high) = report::spread(&mut walls);
            let (cpu, _, _) = report::spread(&mut cpus);
            let (_, _, peak) = report::spread(&mut peaks);
            let what = format!(
                "`crumb replay`, {} events, {name} ({:.0} MB)",
                count(events),
                mb(size)
            );
            println!(
                "{what}: median {:.3} s wall (min {:.3}, max {:.3}), {:.2} s CPU, peak RSS {:.1} MB, {runs} runs",
                wall.as_secs_f64(),
                low.as_secs_f64(),
                high.as_secs_f64(),
                cpu.as_secs_f64(),
                kb_to_mb(peak),
            );
            report::row(
                &what,
                &format!("{:.3} s", wall.as_secs_f64()),
                &format!(
                    "{:.2} s CPU, peak RSS {:.1} MB",
                    cpu.as_secs_f64(),
                    kb_to_mb(peak)
                ),
            );
            let _ = std::fs::remove_file(&path);
        }
    }
    report::conditions("after");
}

#[derive(Clone, Copy)]
enum Generator {
    Own,
    Reference,
}

impl Generator {
    fn write(self, events: u64, path: &Path) {
        let started = Instant::now();
        match self {
            Generator::Own => gen_transcript::generate(events, path),
            Generator::Reference => reference_transcript::generate(events, path),
        }
        .expect("write the benchmark transcript");
        eprintln!(
            "generated {} in {:.1} s",
            path.display(),
            started.elapsed().as_secs_f64()
        );
    }
}

fn count(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{}M", n / 1_000_000)
    } else {
        format!("{}k", n / 1000)
    }
}

/// Run `crumb replay` once: wall time, CPU time (user + system) and the highest `VmHWM` seen
/// while it ran (kB).
fn run_once(transcript: &Path, extra: &[String]) -> (Duration, Duration, u64) {
    let cpu_before = children_cpu();
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crumb"))
        .arg("replay")
        .arg(transcript)
        .args(extra)
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
                let wall = start.elapsed();
                assert!(status.success(), "crumb replay failed: {status}");
                return (wall, children_cpu().saturating_sub(cpu_before), peak);
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// CPU time of this process's waited-for children (`cutime + cstime` in `/proc/self/stat`).
fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // cutime and cstime are fields 16 and 17 of the whole line: 13 and 14 after the name.
    let ticks: u64 = [13, 14]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
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
    bytes as f64 / 1_000_000.0
}
