//! Whole-process timing, the way a person at a shell measures a command (hyperfine-style): warm-up
//! runs that are not counted, then several timed runs, reported as the median and the spread of the
//! wall time, the median CPU time (user + system) and the highest peak RSS.
//!
//! Written here rather than shelling out to `hyperfine` or `/usr/bin/time` so a fresh clone needs
//! nothing but cargo, and so peak RSS comes with every figure:
//!
//! - **wall**: from just before the spawn until `wait` returns (the process start and exit are in);
//! - **CPU**: the rise of `getrusage(RUSAGE_CHILDREN)` across the wait — exact for the process and
//!   every descendant it waited for, provided nothing else in the bench reaps children meanwhile;
//! - **peak RSS**: the process's `VmHWM` (`/proc/<pid>/status`), sampled about every millisecond
//!   while it runs, raised to the kernel's exact figure (`ru_maxrss` of the children) whenever this
//!   run set a new maximum for the bench process's children (always on the first run): so the
//!   largest run of a series is measured exactly, the others to within the last millisecond.
//!
//! Every run has a timeout: past it the process is killed (`SIGKILL`) and the bench panics.
#![allow(
    dead_code,
    reason = "shared by several benches; not every bench uses every helper"
)]

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Time limit of one run unless a bench asks for another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// One run of a process.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub wall: Duration,
    /// User + system time of the process and the descendants it waited for.
    pub cpu: Duration,
    /// Peak resident set size, kB.
    pub peak_rss_kb: u64,
}

/// Several runs of a process.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Timed runs (warm-ups excluded).
    pub runs: usize,
    pub median: Duration,
    pub min: Duration,
    pub max: Duration,
    /// Median CPU time (user + system).
    pub cpu: Duration,
    /// Highest peak RSS over the runs, kB.
    pub peak_rss_kb: u64,
    /// Every run, in the order they ran.
    pub samples: Vec<Sample>,
}

impl Stats {
    /// Peak RSS in MB (1 MB = 1024 kB, as `VmHWM` counts).
    #[allow(clippy::cast_precision_loss, reason = "display only")]
    pub fn peak_rss_mb(&self) -> f64 {
        self.peak_rss_kb as f64 / 1024.0
    }

    /// `min 0.351 s, max 0.402 s, 0.52 s CPU, peak RSS 21.3 MB, 5 runs`: what goes in the
    /// table's "more" column.
    pub fn spread(&self) -> String {
        format!(
            "min {:.3} s, max {:.3} s, {:.2} s CPU, peak RSS {:.1} MB, {} runs",
            self.min.as_secs_f64(),
            self.max.as_secs_f64(),
            self.cpu.as_secs_f64(),
            self.peak_rss_mb(),
            self.runs
        )
    }
}

/// Run `argv` (program first) once to warm up and `runs` times timed, stdin, stdout and stderr on
/// `/dev/null`, each within [`DEFAULT_TIMEOUT`]. Panics when a run fails or times out.
pub fn time_process<S: AsRef<OsStr>>(argv: &[S], runs: usize) -> Stats {
    let (program, rest) = argv.split_first().expect("a program to run");
    time_command(
        || {
            let mut command = Command::new(program);
            command
                .args(rest)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            command
        },
        1,
        runs,
        DEFAULT_TIMEOUT,
    )
}

/// Like [`time_process`], for a command the bench builds itself (its environment, its directory,
/// its own stdout): `make` is called once per run, `warmup` untimed runs first. Stdin is
/// `/dev/null`; stdout and stderr are what `make` set (inherited otherwise — set them to
/// `Stdio::null()` unless the output is wanted: `scripts/bench-table.sh` reads the bench's stdout).
pub fn time_command(
    mut make: impl FnMut() -> Command,
    warmup: usize,
    runs: usize,
    timeout: Duration,
) -> Stats {
    assert!(runs > 0, "at least one timed run");
    for _ in 0..warmup {
        run_once(make(), timeout);
    }
    let samples: Vec<Sample> = (0..runs).map(|_| run_once(make(), timeout)).collect();
    let mut walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    let mut cpus: Vec<Duration> = samples.iter().map(|s| s.cpu).collect();
    walls.sort_unstable();
    cpus.sort_unstable();
    Stats {
        runs,
        median: walls[runs / 2],
        min: walls[0],
        max: walls[runs - 1],
        cpu: cpus[runs / 2],
        peak_rss_kb: samples.iter().map(|s| s.peak_rss_kb).max().unwrap_or(0),
        samples,
    }
}

/// Run `command` once and measure it; panics when it fails to start, exits unsuccessfully or
/// outlives `timeout` (it is killed with `SIGKILL` then).
pub fn run_once(mut command: Command, timeout: Duration) -> Sample {
    command.stdin(Stdio::null());
    let (before_cpu, before_rss) = children_usage();
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
    let pid = child.id();
    let (stop, stopped) = mpsc::channel::<()>();
    let sampler = std::thread::spawn(move || sample_peak(pid, started, timeout, &stopped));
    let status = child.wait().expect("wait for the timed process");
    let wall = started.elapsed();
    drop(stop);
    let (sampled_kb, timed_out) = sampler.join().expect("the RSS sampler");
    let (after_cpu, after_rss) = children_usage();
    assert!(
        !timed_out,
        "{command:?} took longer than {timeout:?} and was killed"
    );
    assert!(status.success(), "{command:?} failed: {status}");
    let exact_kb = if after_rss > before_rss { after_rss } else { 0 };
    Sample {
        wall,
        cpu: after_cpu.saturating_sub(before_cpu),
        peak_rss_kb: sampled_kb.max(exact_kb),
    }
}

/// Sample `pid`'s `VmHWM` until `stopped` disconnects, killing it past `timeout`: the highest
/// sample (kB) and whether it was killed.
fn sample_peak(
    pid: u32,
    started: Instant,
    timeout: Duration,
    stopped: &mpsc::Receiver<()>,
) -> (u64, bool) {
    let status_path = format!("/proc/{pid}/status");
    let mut peak = 0;
    let mut killed = false;
    loop {
        if let Some(kb) = std::fs::read_to_string(&status_path)
            .ok()
            .as_deref()
            .and_then(vm_hwm_kb)
        {
            peak = peak.max(kb);
        }
        if !killed && started.elapsed() > timeout {
            if let Ok(raw) = i32::try_from(pid) {
                let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
            }
            killed = true;
        }
        // The pause between samples; the disconnect ends it at once when the process is reaped.
        match stopped.recv_timeout(Duration::from_millis(1)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return (peak, killed),
        }
    }
}

/// CPU time (user + system) and the largest `ru_maxrss` (kB) of this process's waited-for children.
fn children_usage() -> (Duration, u64) {
    let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) else {
        return (Duration::ZERO, 0);
    };
    let micros = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    (
        micros(usage.user_time()) + micros(usage.system_time()),
        u64::try_from(usage.max_rss()).unwrap_or(0),
    )
}

/// `VmHWM:   12345 kB` → 12345.
fn vm_hwm_kb(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
