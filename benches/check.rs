//! `crumb check` on each shipped pipeline, in process, release build: the exploration of the
//! compiled table through the real reducer (compile excluded). Target: ≤ 1 s each.
//!
//! Run with `cargo bench --bench check`; prints the median of N runs and the states explored.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crumb::engine::explore::{self, Options};
use crumb::pipeline::compile::{CompileOptions, compile_file};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const RUNS: usize = 20;

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
    report::conditions("after");
}
