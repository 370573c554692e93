//! `crumb check` on each shipped pipeline, in process, release build: the exploration of the
//! compiled table through the real reducer (compile excluded). Target: ≤ 200 ms each. Then on
//! generated fan-outs of 2, 3 and 5 alike judges under every `combine` (joined `all`, and
//! `any` for 3): targets 3 judges ≤ 1 s and ≤ 100 MB, 5 judges ≤ 5 s.
//!
//! Run with `cargo bench --bench check`; prints the median of N runs, the states explored and
//! the peak RSS of each case (the kernel's `VmHWM`, reset before each).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crumb::engine::explore::{self, Options};
use crumb::engine::testkit::judges;
use crumb::pipeline::compile::{CompileOptions, compile_file};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const RUNS: usize = 20;
/// Runs of each generated fan-out joined `all`, and of those joined `any` (seconds each).
const FAN_OUT_RUNS: usize = 5;
const ANY_RUNS: usize = 3;
const COMBINES: [&str; 4] = ["all_pass", "majority", "mean", "min"];

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut pipelines: Vec<PathBuf> = std::fs::read_dir(root.join("pipelines"))
        .expect("pipelines/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    pipelines.sort();
    report::conditions("before");
    for pipeline in pipelines {
        let table = compile_file(
            &pipeline,
            &CompileOptions::default(),
            &crumb::fs::real_files(),
        )
        .table
        .expect("a shipped pipeline compiles");
        let mut states = 0;
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                let report = explore::check(&table, Options::default());
                let elapsed = start.elapsed();
                assert!(report.ok(), "{}", report.text());
                states = report.states;
                elapsed
            })
            .collect();
        times.sort();
        let name = pipeline.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        println!(
            "crumb check {name}: median {:.1} ms (min {:.1} ms), {states} states",
            times[RUNS / 2].as_secs_f64() * 1000.0,
            times[0].as_secs_f64() * 1000.0,
        );
        report::row(
            &format!("`crumb check` {name}, in process (compile excluded)"),
            &report::ms(times[RUNS / 2]),
            &format!("{states} states"),
        );
    }
    for (n, join) in [(2, "all"), (3, "all"), (5, "all"), (3, "any")] {
        for combine in COMBINES {
            fan_out(n, join, combine);
        }
    }
    report::conditions("after");
}

/// Time `crumb check` on `n` alike judges joined by `join` and `combine` (`max_verify: 8`).
fn fan_out(n: usize, join: &str, combine: &str) {
    let table = judges(n, join, combine, 8);
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let mut states = 0;
    let mut proven = true;
    let runs = if join == "any" {
        ANY_RUNS
    } else {
        FAN_OUT_RUNS
    };
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let report = explore::check(&table, Options::default());
            let elapsed = start.elapsed();
            states = report.states;
            proven = report.findings.iter().all(|f| f.code != "state-limit");
            elapsed
        })
        .collect();
    times.sort();
    let peak = peak_rss_mb();
    let what = format!("{n} judges, join {join}, combine {combine}");
    println!(
        "crumb check {what}: median {:.1} ms (min {:.1} ms), {states} states{}, peak RSS {peak:.0} MB",
        times[runs / 2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        if proven {
            ""
        } else {
            " (state limit: not proven)"
        },
    );
    report::row(
        &format!("`crumb check` {what}, in process"),
        &report::ms(times[runs / 2]),
        &format!("{states} states, peak RSS {peak:.0} MB"),
    );
}

/// This process's peak resident set since the last reset, in MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
