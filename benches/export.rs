//! `crumb export` of a 100,000-event session, whole process, release build, each format: target
//! ≤ 1 s. The session is a real mock run with 100,000 more events appended through the writer —
//! builder turns of 98 tool calls each (`agent.wake`, `tool.call`s, `agent.stop` with usage), the
//! shape a long agent session has.
//!
//! Run with `cargo bench --bench export`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crumb::transcript::writer::Writer;
use crumb::transcript::{Draft, Kind, Metadata};

const EVENTS: usize = 100_000;
const RUNS: usize = 5;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_crumb"));
    let (scratch, pipeline) = support::scratch_project(&root);
    let home = scratch.path().join("home");
    let status = Command::new(&binary)
        .current_dir(scratch.path())
        .env("CRUMB_HOME", &home)
        .arg("run")
        .arg(&pipeline)
        .arg("a dodger")
        .args(["--adapter", "mock", "--json"])
        .stdout(Stdio::null())
        .status()
        .expect("run crumb");
    assert!(status.success());
    let session = support::only_session(&home);
    let id = session
        .file_name()
        .expect("id")
        .to_string_lossy()
        .into_owned();
    grow(&session, &id);
    for format in ["md", "chrome-trace", "otlp-json", "html"] {
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                let status = Command::new(&binary)
                    .env("CRUMB_HOME", &home)
                    .arg("export")
                    .arg(&session)
                    .args(["--format", format])
                    .stdout(Stdio::null())
                    .status()
                    .expect("run crumb export");
                assert!(status.success());
                started.elapsed()
            })
            .collect();
        times.sort();
        let median = times[RUNS / 2];
        println!(
            "crumb export --format {format}, {EVENTS} extra events: median {:.0} ms (min {:.0}, max {:.0}, n={RUNS}) — {} the 1 s target",
            median.as_secs_f64() * 1000.0,
            times[0].as_secs_f64() * 1000.0,
            times[RUNS - 1].as_secs_f64() * 1000.0,
            if median <= Duration::from_secs(1) {
                "within"
            } else {
                "OVER"
            }
        );
    }
}

/// Append [`EVENTS`] events to the session: builder turns of tool calls, with usage.
fn grow(session: &Path, id: &str) {
    let mut writer = Writer::open(session.join("transcript.jsonl"), id).expect("writer");
    let mut drafts = Vec::with_capacity(EVENTS);
    while drafts.len() < EVENTS {
        let mut wake = serde_json::Map::new();
        wake.insert("role".into(), "builder".into());
        wake.insert("adapter".into(), "mock".into());
        drafts.push(
            Draft::new("builder", Kind::AgentWake)
                .body("builder turn")
                .data(wake),
        );
        for i in 0..98 {
            let mut data = serde_json::Map::new();
            data.insert("tool_kind".into(), "Bash".into());
            drafts.push(
                Draft::new("builder", Kind::ToolCall)
                    .body(format!("ls -la src/{i}"))
                    .data(data),
            );
        }
        let usage = Metadata {
            tokens_in: Some(1200),
            tokens_out: Some(300),
            model: Some("mock@v1".into()),
            provider: Some("none".into()),
            ..Metadata::default()
        };
        drafts.push(
            Draft::new("builder", Kind::AgentStop)
                .body("builder stopped")
                .metadata(usage),
        );
    }
    while !drafts.is_empty() {
        let rest = drafts.split_off(drafts.len().min(10_000));
        writer.append_all(drafts).expect("append");
        drafts = rest;
    }
}
