//! What every bench prints next to its figures, so figures taken on this shared machine at
//! different hours can be compared: a machine-speed gauge and the load average, and one
//! tab-separated `TABLE` row per figure that `scripts/bench-table.sh` gathers into `docs/performance.md`.

use std::time::{Duration, Instant};

/// Iterations of the fixed loop that gauges the machine's speed.
pub const GAUGE_ITERATIONS: u64 = 400_000_000;

/// Time a fixed amount of single-threaded integer work (about 0.4 s on a quiet hour).
pub fn gauge() -> Duration {
    let start = Instant::now();
    let mut x = 0u64;
    for i in 0..GAUGE_ITERATIONS {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    std::hint::black_box(x);
    start.elapsed()
}

/// The 1-minute load average, as the kernel reports it.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Print the gauge and load line of a bench (call at its start and end).
pub fn conditions(when: &str) {
    let g = gauge();
    println!(
        "machine {when}: gauge {:.3} s (fixed {GAUGE_ITERATIONS}-step loop, one thread), load average {}",
        g.as_secs_f64(),
        load()
    );
    println!("TABLE\tgauge\t{:.3} s\tload {}", g.as_secs_f64(), load());
}

/// One row of the performance table (`docs/performance.md`): what was measured, its median, and what else to know.
pub fn row(what: &str, median: &str, note: &str) {
    println!("TABLE\t{what}\t{median}\t{note}");
}

/// Median, min and max of some samples.
pub fn spread<T: Ord + Copy>(samples: &mut [T]) -> (T, T, T) {
    samples.sort_unstable();
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
}

/// Milliseconds with a sensible number of digits.
pub fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}
