//! The artifact store's cost where a person waits for it:
//! - what storing a 5 MB build adds to its turn: `crumb event` (a whole process) recording a
//!   new 5 MB file, against the same event whose file the store already holds (target: the
//!   difference ≤ 20 ms);
//! - `crumb fork` of a 100,000-event session, whole process, to the fork's end (target ≤ 1 s).
//!
//! Run with `cargo bench --bench store`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]
#![allow(
    clippy::cast_precision_loss,
    reason = "figures printed for people; counts are far below 2^52"
)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;
#[path = "support/mod.rs"]
mod support;
#[path = "support/turn.rs"]
mod turn;

const RUNS: usize = 21;
const BUILD_BYTES: usize = 5 << 20;
const FORK_EVENTS: u64 = 100_000;
/// No process of this bench may take longer.
const LIMIT: Duration = Duration::from_secs(300);

/// Run `command` to its end (bounded by [`LIMIT`]) and return its wall time.
fn timed(mut command: Command) -> Duration {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn crumb");
    let status = child
        .wait_timeout(LIMIT)
        .expect("wait for crumb")
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("crumb did not finish within {LIMIT:?}")
        });
    assert!(status.success(), "crumb failed: {status}");
    started.elapsed()
}

/// Open one turn of `builder` in `dir` as the dispatcher does (its authority record, an
/// `agent.wake` naming a fresh capability); the token `crumb event` writes with.
fn open_builder_turn(dir: &Path) -> String {
    std::fs::write(
        dir.join("authority.json"),
        r#"{"roles": {"builder": ["build"]}, "common": ["note"]}"#,
    )
    .expect("authority record");
    turn::open(dir, "builder", "bench:store")
}

/// `crumb event` recording `artifacts/game/blob.bin` as `sha`, as the turn holding `token`.
fn record(dir: &Path, token: &str, sha: &str) -> Duration {
    let draft = format!(
        r#"{{"kind":"build","body":"built","artifacts":[{{"path":"artifacts/game/blob.bin","sha256":"{sha}"}}]}}"#
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_crumb"));
    command
        .arg("event")
        .env("CRUMB_CAPABILITY", token)
        .current_dir(dir)
        .stdin(Stdio::piped());
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn crumb event");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(draft.as_bytes())
        .expect("write the draft");
    let status = child
        .wait_timeout(LIMIT)
        .expect("wait")
        .expect("crumb event finished");
    assert!(status.success(), "crumb event failed");
    started.elapsed()
}

fn bench_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("artifacts/game")).expect("artifacts");
    let file = dir.path().join("artifacts/game/blob.bin");
    let token = open_builder_turn(dir.path());
    let mut fresh = Vec::new();
    let mut stored = Vec::new();
    for run in 0..RUNS {
        // A new build: content the store has never seen (the agent's write is not timed).
        let mut bytes = vec![0u8; BUILD_BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u64)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(run as u64)
                .to_le_bytes()[0];
        }
        std::fs::write(&file, &bytes).expect("write the build");
        let sha = crumb_core::digest::sha256_hex(&bytes);
        fresh.push(record(dir.path(), &token, &sha));
        // The same event again: the store holds it, so nothing is read or written.
        stored.push(record(dir.path(), &token, &sha));
    }
    let (fresh_median, fresh_min, _) = report::spread(&mut fresh);
    let (stored_median, _, _) = report::spread(&mut stored);
    let added = fresh_median.saturating_sub(stored_median);
    println!(
        "store: a new 5 MB build {} (min {}), already stored {}: storing adds {} ({RUNS} runs each)",
        report::ms(fresh_median),
        report::ms(fresh_min),
        report::ms(stored_median),
        report::ms(added)
    );
    report::row(
        "storing a 5 MB build: what it adds to `crumb event` (target ≤ 20 ms)",
        &report::ms(added),
        &format!(
            "new build {}, already stored {}, {RUNS} runs each",
            report::ms(fresh_median),
            report::ms(stored_median)
        ),
    );
}

/// A finished mock session whose transcript then holds [`FORK_EVENTS`] notes before its
/// `done`; returns the session folder and the last note's id.
fn long_session(binary: &Path, scratch: &Path, pipeline: &Path) -> (PathBuf, String) {
    let home = scratch.join("home");
    let mut run = Command::new(binary);
    run.current_dir(scratch)
        .env("CRUMB_HOME", &home)
        .env("CRUMB_STUDIO_PORT", "1")
        .arg("run")
        .arg(pipeline)
        .arg("a dodger")
        .args(["--adapter", "mock", "--json"]);
    timed(run);
    let session = support::only_session(&home);
    let transcript = session.join("transcript.jsonl");
    let text = std::fs::read_to_string(&transcript).expect("transcript");
    let mut lines: Vec<&str> = text.lines().collect();
    let done = lines
        .iter()
        .position(|l| l.contains(r#""kind":"done""#))
        .expect("a done line");
    let tail: Vec<&str> = lines.split_off(done);
    let id = session
        .file_name()
        .expect("id")
        .to_string_lossy()
        .into_owned();
    let mut out = lines.join("\n");
    out.push('\n');
    let mut last = String::new();
    for n in 0..FORK_EVENTS {
        last = ulid::Ulid::from_parts(1_700_000_000_000 + n, u128::from(n)).to_string();
        let _ = writeln!(
            out,
            r#"{{"id":"{last}","ts":"2026-05-01T10:00:00.000Z","session_id":"{id}","from":"builder","kind":"note","body":"note {n}"}}"#
        );
    }
    for line in tail {
        out.push_str(line);
        out.push('\n');
    }
    std::fs::write(&transcript, out).expect("write the long transcript");
    // No snapshot of the old, shorter file.
    let _ = std::fs::remove_file(session.join("state.snapshot"));
    (session, last)
}

fn bench_fork() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_crumb"));
    let (scratch, pipeline) = support::scratch_project(&root);
    let (session, at) = long_session(&binary, scratch.path(), &pipeline);
    let mut samples: Vec<Duration> = (0..5)
        .map(|_| {
            let mut fork = Command::new(&binary);
            fork.current_dir(scratch.path())
                .env("CRUMB_HOME", scratch.path().join("home"))
                .env("CRUMB_STUDIO_PORT", "1")
                .arg("fork")
                .arg(&session)
                .args(["--at", &at, "--json"]);
            timed(fork)
        })
        .collect();
    let (median, min, max) = report::spread(&mut samples);
    println!(
        "fork of a {FORK_EVENTS}-event session: median {} (min {}, max {}; 5 runs)",
        report::ms(median),
        report::ms(min),
        report::ms(max)
    );
    report::row(
        "`crumb fork` of a 100,000-event session, whole process (target ≤ 1 s)",
        &report::ms(median),
        &format!("min {}, max {}, 5 runs", report::ms(min), report::ms(max)),
    );
}

fn main() {
    report::conditions("before");
    bench_store();
    bench_fork();
    report::conditions("after");
}
