//! Write a realistic synthetic transcript for benchmarks:
//! `cargo run --release --example gen_transcript -- --events 1000000 --out PATH`.
//!
//! A goal and a spec, then repeated repair rounds until the event count is reached: a builder spawn
//! with tool calls, notes and artifacts, a build, a QA result, a verifier spawn with judging steps
//! and a PARTIAL `judge.score`, the engine's awaiting marker, and a person's veto with its ack —
//! so every event still goes through routing, guards and commands. Ids are monotonic ULIDs and
//! timestamps advance 1 ms per event, so the output is the same on every run.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use crumb::transcript::{
    ArtifactRef, Deviation, Dimension, Draft, Event, Kind, Metadata, ScoreSource, Scores,
    Visibility,
};
use crumb::vocab::{Severity, Verdict};
use serde_json::{Map, Value, json};

/// 2026-05-01T00:00:00Z in milliseconds.
const START_MS: i64 = 1_777_593_600_000;

/// Writes numbered events.
pub struct Generator<W: Write> {
    out: W,
    n: u64,
    limit: u64,
}

impl<W: Write> Generator<W> {
    pub fn new(out: W, limit: u64) -> Self {
        Generator { out, n: 0, limit }
    }

    fn full(&self) -> bool {
        self.n >= self.limit
    }

    fn emit(
        &mut self,
        from: &str,
        kind: Kind,
        edit: impl FnOnce(&mut Event),
    ) -> std::io::Result<String> {
        if self.full() {
            return Ok(String::new());
        }
        let ms = START_MS + i64::try_from(self.n).unwrap_or(i64::MAX);
        let id =
            ulid::Ulid::from_parts(u64::try_from(ms).unwrap_or(0), u128::from(self.n)).to_string();
        let ts = chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        let mut event =
            Draft::new(from, kind).into_event(id.clone(), ts, "01KBENCH0000000000000000000".into());
        edit(&mut event);
        serde_json::to_writer(&mut self.out, &event)?;
        self.out.write_all(b"\n")?;
        self.n += 1;
        Ok(id)
    }

    /// Generate until the limit.
    pub fn run(&mut self) -> std::io::Result<()> {
        self.emit("system", Kind::SessionStart, |e| {
            e.body = Some("session started".into());
        })?;
        self.emit("user", Kind::Goal, |e| {
            e.body = Some("60-second match-3 with combo bonus".into());
        })?;
        self.emit("planner-lead", Kind::AgentWake, |_| {})?;
        self.emit("planner-lead", Kind::Spec, |e| {
            e.body = Some("A 60-second match-3 on an 8×8 grid; combos multiply the score.".into());
            e.data = Some(object(json!({
                "acceptance_criteria": ["grid renders", "swaps animate", "timer ends the run"],
                "ac_predicates": [{"id": "ac1", "intent": "grid", "predicate_js": "!!window.__GAME__"}]
            })));
        })?;
        self.emit("planner-lead", Kind::AgentStop, |e| {
            e.metadata = Some(Box::new(usage(0)));
        })?;
        let mut round = 0u64;
        while !self.full() {
            round += 1;
            self.round(round)?;
        }
        self.out.flush()
    }

    fn round(&mut self, round: u64) -> std::io::Result<()> {
        self.emit("builder", Kind::AgentWake, |e| {
            e.data = Some(object(json!({"adapter": "mock"})));
        })?;
        for call in 0..20 {
            self.emit("builder", Kind::ToolCall, |e| {
                e.body = Some(format!(
                    "edit artifacts/game/src/scene{call}.js (round {round})"
                ));
                e.data = Some(object(json!({"tool_kind": "edit"})));
                e.metadata = Some(Box::new(Metadata {
                    visibility: Some(Visibility::Private),
                    ..Metadata::default()
                }));
            })?;
        }
        for note in 0..3 {
            self.emit("builder", Kind::Note, |e| {
                e.body = Some(format!("progress note {note}: wiring the combo counter"));
            })?;
        }
        for file in ["game/index.html", "game/src/main.js"] {
            self.emit("system", Kind::ArtifactCreated, |e| {
                e.artifacts = vec![artifact(file)];
            })?;
        }
        let build = self.emit("builder", Kind::Build, |e| {
            e.body = Some(format!("build {round}: canvas game under artifacts/game/"));
            e.artifacts = vec![artifact("game/index.html")];
            e.metadata = Some(Box::new(Metadata {
                provider: Some("openai".into()),
                ..Metadata::default()
            }));
        })?;
        self.emit("builder", Kind::AgentStop, |e| {
            e.metadata = Some(Box::new(usage(1)));
        })?;
        self.emit("system", Kind::QaResult, |e| {
            e.parent_event_id = Some(build.clone());
            e.data = Some(object(json!({
                "exec_exit_code": 0,
                "ac_results": [{"ac_id": "ac1", "status": "PASS"}],
                "runtime_ms": 1834
            })));
        })?;
        self.emit("verifier", Kind::AgentWake, |_| {})?;
        for _ in 0..4 {
            self.emit("verifier", Kind::StepJudge, |e| {
                e.body = Some("grader: AC1 ✓ AC2 ✓ AC3 partial".into());
            })?;
        }
        let judge = self.emit("verifier", Kind::JudgeScore, |e| {
            e.scores = Some(Box::new(partial_scores()));
            e.metadata = Some(Box::new(Metadata {
                provider: Some("anthropic".into()),
                ..Metadata::default()
            }));
        })?;
        self.emit("verifier", Kind::AgentStop, |e| {
            e.metadata = Some(Box::new(usage(1)));
        })?;
        self.emit("system", Kind::SessionAwaiting, |e| {
            e.parent_event_id = Some(judge.clone());
            e.body = Some("verdict PARTIAL needs a person".into());
        })?;
        let veto = self.emit("user", Kind::UserVeto, |e| {
            e.body = Some("the timer never reaches zero".into());
        })?;
        self.emit("system", Kind::Ack, |e| {
            e.body = Some("vetoed".into());
            e.metadata = Some(Box::new(Metadata {
                ack_for: Some(veto.clone()),
                ..Metadata::default()
            }));
        })?;
        Ok(())
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn usage(tokens: u64) -> Metadata {
    Metadata {
        tokens_in: Some(tokens),
        tokens_out: Some(0),
        latency_ms: Some(1200),
        ..Metadata::default()
    }
}

fn artifact(path: &str) -> ArtifactRef {
    ArtifactRef {
        path: path.into(),
        sha256: "a".repeat(64),
        role: None,
    }
}

fn partial_scores() -> Scores {
    let dim = |score: f64, source| {
        Some(Dimension {
            score,
            source,
            lookup: None,
            evidence: Vec::new(),
        })
    };
    Scores {
        d1: dim(3.5, ScoreSource::VerifierLlm),
        d2: dim(5.0, ScoreSource::QaCheckEffect),
        d3: dim(3.0, ScoreSource::VerifierLlm),
        d4: dim(3.5, ScoreSource::ReducerAuto),
        d5: dim(3.0, ScoreSource::VerifierLlm),
        d6: dim(3.0, ScoreSource::QaCheckEffect),
        dims: std::collections::BTreeMap::new(),
        aggregate: Some(21.0),
        verdict: Some(Verdict::Partial),
        feedback: Some("the timer keeps running after zero".into()),
        suggested_change: Some("stop the loop when the timer hits 0".into()),
        deviation: Some(Deviation {
            kind: Severity::Important,
        }),
        courteval: None,
        audit_violations: Vec::new(),
    }
}

/// Write `events` events to `out`.
pub fn generate(events: u64, out: &std::path::Path) -> std::io::Result<()> {
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::File::create(out)?;
    Generator::new(BufWriter::with_capacity(1 << 20, file), events).run()
}

#[allow(
    dead_code,
    reason = "also compiled into benches/replay.rs, which has its own main"
)]
fn main() -> std::process::ExitCode {
    let mut events = 1_000_000u64;
    let mut out = PathBuf::from("target/bench-data/transcript-1m.jsonl");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--events", Some(n)) => match n.parse() {
                Ok(n) => events = n,
                Err(_) => return usage_error(&format!("--events needs a number, got `{n}`")),
            },
            ("--out", Some(path)) => out = PathBuf::from(path),
            _ => return usage_error(&format!("unexpected argument `{arg}`")),
        }
    }
    match generate(events, &out) {
        Ok(()) => {
            println!("wrote {events} events to {}", out.display());
            std::process::ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("gen_transcript: cannot write {}: {err}", out.display());
            std::process::ExitCode::from(1)
        }
    }
}

fn usage_error(message: &str) -> std::process::ExitCode {
    eprintln!("gen_transcript: {message}\nusage: gen_transcript [--events N] [--out PATH]");
    std::process::ExitCode::from(2)
}
