//! The runtime's hot paths, measured. Prints medians for:
//! - `crumb ls --json` as a whole process over 500 sessions (reads only meta.json and probes locks);
//! - `crumb say` as a whole process (resolve a prefix, validate, locked append);
//! - `crumb status` as a whole process on a 1,000,000-event reference-shaped session: its first
//!   fold (which writes `state.snapshot`), then with the snapshot valid (target ≤ 50 ms), and after
//!   1,000 appended events;
//! - the inbox grammar, per line;
//! - the Claude and Codex stream parsers, per stdout line;
//! - spawning `true` through the process spawner (own group, pipes, log, reap).
//!
//! Run with `cargo bench --bench runtime`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the crumb binary and helpers as a user would, not through crate::process"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crumb::adapters::{self, AdapterKind};
use crumb::home::{CrumbHome, Project};
use crumb::process::{SpawnSpec, run};
use crumb::runtime::inbox::parse_line;
use crumb::runtime::session;
use crumb::transcript::writer::Writer;
use crumb::transcript::{Draft, Kind};

#[path = "support/reference_transcript.rs"]
mod reference_transcript;
#[allow(dead_code, reason = "shared by several benches")]
#[path = "support/report.rs"]
mod report;

const SESSIONS: usize = 500;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time_process(runs: usize, mut command: impl FnMut() -> Command) -> Duration {
    let samples = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let status = command()
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("spawn crumb");
            assert!(status.success(), "crumb failed");
            started.elapsed()
        })
        .collect();
    median(samples)
}

fn main() {
    report::conditions("before");
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = CrumbHome::at(tmp.path().join("home"));
    let project_dir = tmp.path().join("project");
    std::fs::create_dir_all(&project_dir).expect("project dir");
    let project = Project::containing(&project_dir).expect("project");
    let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines/casual.yaml");
    let mut ids = Vec::new();
    for n in 0..SESSIONS {
        let created = session::create(&home, &project, &pipeline, &format!("pitch number {n}"))
            .expect("session");
        ids.push(created.dir.id().to_owned());
        // Dropping the lock leaves a "dead" session: the listing probes every lock.
    }
    let crumb = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_crumb"));
        command
            .args(args)
            .current_dir(&project_dir)
            .env("CRUMB_HOME", home.root());
        command
    };

    let ls = time_process(30, || crumb(&["ls", "--json"]));
    report::row(
        &format!("`crumb ls --json`, {SESSIONS} sessions"),
        &report::ms(ls),
        "30 runs",
    );
    println!(
        "crumb ls --json, {SESSIONS} sessions: median {:.2} ms",
        ls.as_secs_f64() * 1e3
    );

    let prefix = &ids[SESSIONS / 2];
    let say = time_process(100, || {
        crumb(&["say", prefix, "@builder make the combo bonus bigger"])
    });
    report::row(
        "`crumb say` (validate + locked append)",
        &report::ms(say),
        "100 runs",
    );
    println!(
        "crumb say (validate + locked append): median {:.2} ms",
        say.as_secs_f64() * 1e3
    );

    bench_status(&home, &project, &pipeline, &crumb);

    bench_inbox_grammar();
    bench_stream_parsers();
    bench_spawn(&tmp.path().join("spawn"));
    report::conditions("after");
}

/// Events in the session `crumb status` is timed on.
const STATUS_EVENTS: u64 = 1_000_000;

/// `crumb status` on a long session: the first fold, then from its snapshot.
fn bench_status(
    home: &CrumbHome,
    project: &Project,
    pipeline: &Path,
    crumb: &dyn Fn(&[&str]) -> Command,
) {
    let created = session::create(home, project, pipeline, "a long session").expect("session");
    let id = created.dir.id().to_owned();
    let transcript = created.dir.transcript();
    drop(created.lock);
    reference_transcript::generate(STATUS_EVENTS, &transcript).expect("generate");
    let size = std::fs::metadata(&transcript).map_or(0, |m| m.len());
    let what = format!(
        "`crumb status`, {}M-event reference-shaped session ({} MB)",
        STATUS_EVENTS / 1_000_000,
        size / 1_000_000
    );
    let first = time_process(1, || crumb(&["status", &id]));
    let snapshot = created.dir.path().join("state.snapshot");
    assert!(snapshot.is_file(), "the first status wrote a snapshot");
    report::row(
        &format!("{what}, first fold (writes the snapshot)"),
        &report::ms(first),
        "one run",
    );
    let warm = time_process(20, || crumb(&["status", &id]));
    report::row(
        &format!("{what}, snapshot valid"),
        &report::ms(warm),
        "20 runs; target ≤ 50 ms",
    );
    let mut writer = Writer::open(&transcript, &id).expect("writer");
    let appended: Vec<Duration> = (0..10)
        .map(|round| {
            for n in 0..1_000 {
                writer
                    .append(
                        Draft::new("builder", Kind::AgentThoughtSummary)
                            .body(format!("{round}.{n}")),
                    )
                    .expect("append");
            }
            time_process(1, || crumb(&["status", &id]))
        })
        .collect();
    let after = median(appended);
    report::row(
        &format!("{what}, snapshot + 1,000 appended events"),
        &report::ms(after),
        "10 runs",
    );
    println!(
        "{what}: first fold {:.0} ms, snapshot valid {:.2} ms, + 1,000 events {:.2} ms",
        first.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e3,
        after.as_secs_f64() * 1e3
    );
    drop(writer);
    let _ = std::fs::remove_file(&transcript);
}

fn bench_inbox_grammar() {
    let roles: Vec<String> = ["planner-lead", "builder", "verifier"]
        .map(String::from)
        .to_vec();
    let lines = [
        "/approve",
        "/veto the timer never ends",
        "/pause @builder",
        "/goto planner-lead rethink the mechanic",
        "/swap builder=codex",
        "@verifier be strict about the timer",
        "make it pink",
        "/ask scorecard",
        "# a comment",
        "/reset-circuit all",
    ];
    let rounds: u32 = 20_000;
    let samples: Vec<Duration> = (0..15)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..rounds {
                for line in lines {
                    std::hint::black_box(parse_line(std::hint::black_box(line), &roles).ok());
                }
            }
            started.elapsed()
        })
        .collect();
    let per_line =
        median(samples).as_secs_f64() / f64::from(rounds * u32::try_from(lines.len()).unwrap_or(1));
    println!("inbox parse_line: median {:.0} ns/line", per_line * 1e9);
}

fn bench_stream_parsers() {
    for (kind, stream) in [
        (AdapterKind::ClaudeCode, claude_stream()),
        (AdapterKind::Codex, codex_stream()),
    ] {
        let samples: Vec<Duration> = (0..15)
            .map(|_| {
                let mut parser = adapters::parser(kind);
                let started = Instant::now();
                for line in &stream {
                    std::hint::black_box(parser.line(line));
                }
                std::hint::black_box(parser.summary());
                started.elapsed()
            })
            .collect();
        let count = u32::try_from(stream.len()).unwrap_or(u32::MAX);
        let per_line = median(samples).as_secs_f64() / f64::from(count);
        println!(
            "{kind} stream parser: median {:.2} µs/line ({} lines)",
            per_line * 1e6,
            stream.len()
        );
    }
}

fn bench_spawn(spawn_dir: &Path) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    std::fs::create_dir_all(spawn_dir).expect("spawn dir");
    let samples: Vec<Duration> = (0..100)
        .map(|n| {
            let spec = SpawnSpec {
                program: "true".into(),
                args: Vec::new(),
                cwd: spawn_dir.to_path_buf(),
                env: Vec::new(),
                env_remove: Vec::new(),
                stdin: Some(b"prompt".to_vec()),
                log_path: spawn_dir.join(format!("logs/true-{n}.log")),
                wall_timeout: Duration::from_secs(30),
                idle_timeout: Duration::from_secs(30),
                kill_grace: Duration::from_millis(200),
                pgid_file: None,
            };
            let started = Instant::now();
            let report = runtime.block_on(run(spec, |_, _| {}, std::future::pending()));
            assert!(report.outcome.is_success(), "{report:?}");
            started.elapsed()
        })
        .collect();
    println!(
        "process spawn of `true` (group, pipes, log, reap): median {:.2} ms",
        median(samples).as_secs_f64() * 1e3
    );
}

fn claude_stream() -> Vec<String> {
    let mut lines = vec![r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-6","tools":["Bash"]}"#.to_owned()];
    for n in 0..5_000 {
        lines.push(format!(
            r#"{{"type":"assistant","message":{{"id":"msg_{n}","content":[{{"type":"tool_use","id":"t{n}","name":"Write","input":{{"file_path":"artifacts/game/f{n}.js","content":"{}"}}}}],"usage":{{"input_tokens":5,"output_tokens":40}}}},"session_id":"s"}}"#,
            "x".repeat(400)
        ));
        lines.push(format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{n}","content":"ok"}}]}},"session_id":"s"}}"#
        ));
    }
    lines.push(r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.04,"usage":{"input_tokens":12,"output_tokens":310},"modelUsage":{"claude-sonnet-4-6":{"inputTokens":12,"outputTokens":310}}}"#.to_owned());
    lines
}

fn codex_stream() -> Vec<String> {
    let mut lines = vec![
        r#"{"type":"thread.started","thread_id":"t"}"#.to_owned(),
        r#"{"type":"turn.started"}"#.to_owned(),
    ];
    for n in 0..5_000 {
        lines.push(format!(
            r#"{{"type":"item.started","item":{{"id":"item_{n}","type":"command_execution","command":"bash -lc 'node check.js {n}'","aggregated_output":"","exit_code":null,"status":"in_progress"}}}}"#
        ));
        lines.push(format!(
            r#"{{"type":"item.completed","item":{{"id":"item_{n}","type":"command_execution","command":"bash -lc 'node check.js {n}'","aggregated_output":"{}","exit_code":0,"status":"completed"}}}}"#,
            "y".repeat(400)
        ));
    }
    lines.push(r#"{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}"#.to_owned());
    lines
}
