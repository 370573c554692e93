//! `crumb event` as a whole process: spawn, read stdin, check the turn's capability (its record,
//! its `agent.wake` and the turn's lines since), read the authority record, lock, append, print. Prints the median wall time per append (target: ≤ 5 ms) for an empty transcript and for
//! one that already holds 100,000 lines (the append must not depend on the transcript's length),
//! then the typed reader's cost per line on that transcript.
//!
//! Run with `cargo bench --bench event`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "figures printed for people; counts are far below 2^52"
)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;
#[path = "support/turn.rs"]
mod turn;

const RUNS: usize = 200;
const WARMUP: usize = 10;
const DRAFT: &str = r#"{"kind":"build","body":"build done","artifacts":[{"path":"artifacts/game/index.html","sha256":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","role":"src"}],"data":{"phaser_version":"3.80.1"}}"#;

fn append_once(capability: &str) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crumb"))
        .arg("event")
        .env("CRUMB_CAPABILITY", capability)
        .env("CRUMB_HARNESS", "mock")
        .env("CRUMB_PROVIDER", "none")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn crumb event");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(DRAFT.as_bytes())
        .expect("write draft");
    let status = child.wait().expect("wait for crumb event");
    let elapsed = started.elapsed();
    assert!(status.success(), "crumb event failed");
    elapsed
}

/// Append [`RUNS`] times as one turn of `builder`, opened in `session` as the dispatcher opens one.
fn measure(label: &str, session: &Path) {
    let token = turn::open(session, "builder", &format!("bench:{label}"));
    let token = token.as_str();
    for _ in 0..WARMUP {
        append_once(token);
    }
    let mut samples: Vec<Duration> = (0..RUNS).map(|_| append_once(token)).collect();
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    report::row(
        &format!("`crumb event`, whole process, one append, {label}"),
        &report::ms(at(0.5)),
        &format!(
            "min {}, p90 {}, {RUNS} runs",
            report::ms(at(0.0)),
            report::ms(at(0.9))
        ),
    );
    println!(
        "crumb event [{label}]: median {:.2} ms  (min {:.2}, p90 {:.2}, max {:.2}; {RUNS} runs)",
        ms(at(0.5)),
        ms(at(0.0)),
        ms(at(0.9)),
        ms(at(1.0)),
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    report::conditions("before");
    let dir = tempfile::tempdir().expect("temp dir");
    // The firewall reads the session's authority record on every append, as in a real session.
    let session = |name: &str| {
        let session = dir.path().join(name);
        std::fs::create_dir(&session).expect("session folder");
        std::fs::write(
            session.join("authority.json"),
            r#"{"roles": {"builder": ["build"]}, "common": ["note", "agent.thought_summary"]}"#,
        )
        .expect("write authority.json");
        session
    };
    let empty = session("empty");
    measure("empty transcript", &empty);

    let large_session = session("large");
    let large = large_session.join("transcript.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&large).expect("create"));
    for n in 0..100_000u64 {
        let id = ulid::Ulid::from_parts(1_700_000_000_000 + n, u128::from(n)).to_string();
        writeln!(
            file,
            r#"{{"id":"{id}","ts":"2026-05-01T10:00:00.000Z","session_id":"bench","from":"builder","kind":"note","body":"line {n}"}}"#
        )
        .expect("write");
    }
    drop(file);
    measure("100,000-line transcript", &large_session);
    measure_reader(&large);
    measure_parse(&large);
    report::conditions("after");
}

/// `serde_json` into [`crumb::transcript::Event`] alone, and the semantic check alone, from memory.
fn measure_parse(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    let per_line = |f: &dyn Fn(&str) -> bool| {
        let mut samples = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            let ok = lines.iter().filter(|line| f(line)).count();
            assert_eq!(ok, lines.len());
            samples.push(started.elapsed());
        }
        samples.sort_unstable();
        samples[samples.len() / 2].as_secs_f64() * 1e9 / lines.len() as f64
    };
    let parse = per_line(&|line| serde_json::from_str::<crumb::transcript::Event>(line).is_ok());
    let events: Vec<crumb::transcript::Event> = lines
        .iter()
        .map(|line| serde_json::from_str(line).expect("event"))
        .collect();
    let mut samples = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let ok = events
            .iter()
            .filter(|e| crumb::transcript::validate::check_event(e).is_empty())
            .count();
        assert_eq!(ok, events.len());
        samples.push(started.elapsed());
    }
    samples.sort_unstable();
    let check = samples[2].as_secs_f64() * 1e9 / events.len() as f64;
    println!(
        "Event parse: median {parse:.0} ns per line; check_event: median {check:.0} ns per event"
    );
}

/// Typed, checked reading of the transcript the appends above produced (context for replay).
fn measure_reader(path: &Path) {
    let mut samples = Vec::new();
    let mut lines = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let file = std::fs::File::open(path).expect("open");
        lines = crumb::transcript::reader::Reader::new(std::io::BufReader::with_capacity(
            1 << 16,
            file,
        ))
        .flatten()
        .count();
        samples.push(started.elapsed());
    }
    samples.sort_unstable();
    let median = samples[samples.len() / 2];
    println!(
        "reader (typed + checked): median {:.0} ns per line over {lines} lines",
        median.as_secs_f64() * 1e9 / lines as f64
    );
}
