//! `crumb mock-agent`: the deterministic agent, run by the dispatcher as a real child process
//! exactly like a real agent CLI (prompt on stdin, `CRUMB_*` environment, write-back through
//! `crumb event`), so mock runs exercise the same spawn, timeout, log and firewall paths.
//!
//! What it does follows from the kind its role produces (`CRUMB_PRODUCES`), not from role names:
//! - `spec`: writes `artifacts/spec.md`, emits `spec` with acceptance criteria and AC predicates;
//! - `build`: writes the game under `artifacts/game/`, emits `build` with every file's sha256;
//! - `judge.score`: reads the latest `qa.result` and scores from it alone — D2 is QA's exit code,
//!   and a failed QA run is never scored as working;
//! - anything else: emits the first produced kind with a short body.
//!
//! The last stdout line is a usage record (`{"usage": {...}}`) the dispatcher parses.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::game;
use super::scenario::{DELAY_ENV, SCENARIO_ENV, Scenario};
use crate::transcript::{Event, Kind};

/// Environment variable listing the kinds the role produces (comma-separated).
pub(crate) const PRODUCES_ENV: &str = "CRUMB_PRODUCES";
/// Largest prompt read from stdin.
const MAX_PROMPT_BYTES: u64 = 8 * 1024 * 1024;

/// What the mock knows about its turn, all from the environment.
struct Turn {
    actor: String,
    session_dir: PathBuf,
    produces: Vec<String>,
    scenario: Scenario,
    delay: Duration,
    events: Vec<Event>,
}

/// Entry point of the hidden `crumb mock-agent` command.
pub(crate) fn run() -> ExitCode {
    match execute() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("mock-agent: {message}");
            crate::exit_codes::exit(crate::exit_codes::FAILURE)
        }
    }
}

fn execute() -> Result<ExitCode, String> {
    let turn = Turn::from_env()?;
    let mut prompt = Vec::new();
    let _ = std::io::stdin()
        .lock()
        .take(MAX_PROMPT_BYTES)
        .read_to_end(&mut prompt);
    println!(
        "mock {}: read a {}-byte prompt ({} scenario)",
        turn.actor,
        prompt.len(),
        turn.scenario
    );
    let produced = turn.produces.first().cloned().unwrap_or_default();
    let usage = match produced.as_str() {
        "spec" => {
            turn.plan()?;
            json!({"input_tokens": 2000, "output_tokens": 800, "cache_read_tokens": 1500, "cost_usd": 0.05})
        }
        "build" => {
            if let Some(code) = turn.misbehave_as_builder() {
                return Ok(code);
            }
            turn.build()?;
            json!({"input_tokens": 5000, "output_tokens": 3000, "cache_read_tokens": 3500, "cost_usd": 0.12})
        }
        "judge.score" => {
            turn.judge()?;
            json!({"input_tokens": 4000, "output_tokens": 1500, "cache_read_tokens": 3000, "cost_usd": 0.08})
        }
        _ => {
            turn.pause();
            if !produced.is_empty() {
                emit(&json!({"kind": produced, "body": format!("mock {} output", turn.actor)}))?;
            }
            json!({"input_tokens": 1000, "output_tokens": 400, "cache_read_tokens": 0, "cost_usd": 0.02})
        }
    };
    let mut usage = usage;
    usage["model"] = json!("mock@v1");
    println!("{}", json!({ "usage": usage }));
    Ok(crate::exit_codes::exit(crate::exit_codes::SUCCESS))
}

impl Turn {
    fn from_env() -> Result<Turn, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let actor = var("CRUMB_ACTOR").ok_or("CRUMB_ACTOR is not set")?;
        let session_dir =
            PathBuf::from(var("CRUMB_SESSION_DIR").ok_or("CRUMB_SESSION_DIR is not set")?);
        let transcript = var("CRUMB_TRANSCRIPT_PATH")
            .map_or_else(|| session_dir.join("transcript.jsonl"), PathBuf::from);
        let produces = var(PRODUCES_ENV)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        let scenario = match var(SCENARIO_ENV) {
            Some(name) => name.parse::<Scenario>().map_err(|e| e.to_string())?,
            None => Scenario::Pass,
        };
        let delay = Duration::from_millis(
            var(DELAY_ENV)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
                .min(600_000),
        );
        let (events, _issues) = crate::transcript::reader::read_path(&transcript)
            .map_err(|e| format!("cannot read {}: {e}", transcript.display()))?;
        Ok(Turn {
            actor,
            session_dir,
            produces,
            scenario,
            delay,
            events,
        })
    }

    /// Slow steps down when asked to (kill-and-resume tests).
    fn pause(&self) {
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
    }

    fn goal(&self) -> String {
        self.events
            .iter()
            .rev()
            .find(|e| e.kind == Kind::Goal)
            .and_then(|e| e.body.clone())
            .unwrap_or_default()
    }

    /// How many turns this role has started, this one included.
    fn turn_number(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e.kind == Kind::AgentWake && e.from == self.actor)
            .count()
            .max(1)
    }

    fn plan(&self) -> Result<(), String> {
        let goal = self.goal();
        let (criteria, predicates) = game::acceptance(&goal);
        let revised = self.events.iter().any(|e| e.kind == Kind::Spec);
        let mut spec = format!("# {}\n\n", game::design(&goal, 0).title);
        if revised {
            spec.push_str(
                "Revised after the verifier's feedback: the core loop is simplified.\n\n",
            );
        }
        let _ = write!(spec, "Pitch: {goal}\n\nAcceptance criteria:\n");
        for criterion in &criteria {
            let _ = writeln!(spec, "- {criterion}");
        }
        self.pause();
        let path = self.session_dir.join("artifacts/spec.md");
        write_file(&path, &spec)?;
        emit(&json!({
            "kind": "spec",
            "body": format!("{}spec for \"{}\": {} criteria", if revised { "revised " } else { "" }, goal, criteria.len()),
            "data": { "acceptance_criteria": criteria, "ac_predicates": predicates },
            "artifacts": [{ "path": "artifacts/spec.md", "sha256": crumb_core::digest::sha256_hex(spec.as_bytes()), "role": "doc" }],
        }))
    }

    /// The builder scenarios that fail the turn. `Some(exit code)` when the turn must fail.
    fn misbehave_as_builder(&self) -> Option<ExitCode> {
        let first = self.turn_number() == 1;
        match self.scenario {
            Scenario::CrashAlways => {
                eprintln!("mock builder: simulated crash (every turn)");
                Some(crate::exit_codes::exit(crate::exit_codes::SIMULATED_CRASH))
            }
            Scenario::CrashOnce if first => {
                eprintln!("mock builder: simulated crash (first turn)");
                Some(crate::exit_codes::exit(crate::exit_codes::SIMULATED_CRASH))
            }
            Scenario::HangOnce if first => {
                // A silent child in our process group: the idle timeout must kill both.
                let child = crate::process::command::blocking("sleep")
                    .arg("3600")
                    .stdin(Stdio::null())
                    .spawn();
                if let Ok(child) = &child {
                    eprintln!("mock builder: hanging with child pid {}", child.id());
                }
                let _ = std::io::stderr().flush();
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            _ => None,
        }
    }

    fn build(&self) -> Result<(), String> {
        let goal = self.goal();
        let variant = u32::try_from(self.events.iter().filter(|e| e.kind == Kind::Build).count())
            .unwrap_or(0);
        let files = game::render(&goal, variant);
        self.pause();
        let mut artifacts = Vec::new();
        let mut bytes = 0usize;
        for (path, content) in &files {
            let relative = format!("artifacts/{path}");
            write_file(&self.session_dir.join(&relative), content)?;
            bytes += content.len();
            artifacts.push(json!({ "path": relative, "sha256": crumb_core::digest::sha256_hex(content.as_bytes()), "role": "src" }));
        }
        let repair = variant > 0;
        let design = game::design(&goal, variant);
        emit(&json!({
            "kind": "build",
            "body": format!("{} \"{}\": {} file(s), {} bytes, canvas game with keyboard and pointer input, score, timer, game over and restart",
                if repair { "rebuilt" } else { "built" }, design.title, files.len(), bytes),
            "data": { "file_count": files.len(), "bytes": bytes, "entry": "game/index.html", "mechanic": design.mechanic.as_str() },
            "artifacts": artifacts,
        }))
    }

    fn judge(&self) -> Result<(), String> {
        let qa = self.events.iter().rev().find(|e| e.kind == Kind::QaResult);
        let earlier_verdicts = self
            .events
            .iter()
            .filter(|e| e.kind == Kind::JudgeScore)
            .count();
        let qa_code = qa.and_then(|e| e.data.as_ref()?.get("exec_exit_code")?.as_i64());
        let findings: Vec<String> = qa
            .and_then(|e| e.data.as_ref()?.get("findings")?.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .take(5)
            .collect();
        let qa_id = qa.map(|e| e.id.clone());
        self.pause();
        let (dims, severity, body, feedback, change) = if qa_code.is_none_or(|code| code != 0) {
            let shown = if findings.is_empty() {
                "QA did not pass".to_owned()
            } else {
                findings.join("; ")
            };
            (
                [2.0, 0.0, 2.0, 2.0, 2.0, 3.0],
                Some("Important"),
                format!(
                    "QA exit code {}: the build does not run as required",
                    qa_code.map_or_else(|| "missing".into(), |c| c.to_string())
                ),
                Some(shown),
                Some("fix what QA reported, then rebuild".to_owned()),
            )
        } else {
            match (self.scenario, earlier_verdicts) {
                (Scenario::FailOnce, 0) => (
                    [2.0, 5.0, 2.0, 2.0, 2.0, 3.0],
                    Some("Important"),
                    "QA passed, but the combo bonus is invisible to the player".to_owned(),
                    Some(
                        "the combo bonus is not signposted: players cannot tell it exists"
                            .to_owned(),
                    ),
                    Some("show the combo multiplier on screen while it is active".to_owned()),
                ),
                (Scenario::CriticalOnce, 0) => (
                    [1.0, 5.0, 2.0, 2.0, 2.0, 4.0],
                    Some("Critical"),
                    "QA passed, but the spec misses the pitch's core mechanic".to_owned(),
                    Some("the spec does not describe the mechanic the pitch asks for".to_owned()),
                    Some("re-plan the core loop around the pitch's mechanic".to_owned()),
                ),
                (Scenario::Partial, _) => (
                    [3.5, 5.0, 3.5, 3.0, 3.0, 4.0],
                    Some("Minor"),
                    "QA passed; playable but thin — a person should decide".to_owned(),
                    Some("playable, but the difficulty curve is flat".to_owned()),
                    Some("ramp the spawn rate over the round".to_owned()),
                ),
                _ => (
                    [5.0, 5.0, 4.5, 5.0, 4.5, 5.0],
                    None,
                    "QA passed and the game meets every criterion".to_owned(),
                    None,
                    None,
                ),
            }
        };
        let aggregate: f64 = dims.iter().sum();
        let verdict = if aggregate >= 24.0 {
            "PASS"
        } else if aggregate >= 18.0 {
            "PARTIAL"
        } else {
            "FAIL"
        };
        let mut scores = serde_json::Map::new();
        for (index, score) in dims.iter().enumerate() {
            let name = format!("D{}", index + 1);
            let dim = if index == 1 {
                json!({"score": score, "source": "qa-check-effect", "lookup": "qa.result.exec_exit_code"})
            } else {
                json!({"score": score, "source": "verifier-llm", "evidence": qa_id.iter().collect::<Vec<_>>()})
            };
            scores.insert(name, dim);
        }
        scores.insert("aggregate".into(), json!(aggregate));
        scores.insert("verdict".into(), json!(verdict));
        if let Some(feedback) = feedback {
            scores.insert("feedback".into(), json!(feedback));
        }
        if let Some(change) = change {
            scores.insert("suggested_change".into(), json!(change));
        }
        if let Some(severity) = severity {
            scores.insert("deviation".into(), json!({ "type": severity }));
        }
        emit(&json!({ "kind": "judge.score", "body": body, "scores": scores }))
    }
}

/// Write one event back through `crumb event`, the path every agent uses.
fn emit(event: &Value) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the crumb binary: {e}"))?;
    let mut child = crate::process::command::blocking(exe)
        .arg("event")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run crumb event: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(event.to_string().as_bytes())
            .map_err(|e| format!("cannot write to crumb event: {e}"))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("crumb event failed: {e}"))?;
    let _ = std::io::stdout().write_all(&output.stdout);
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "crumb event refused the {} event: {}",
            event.get("kind").and_then(Value::as_str).unwrap_or("?"),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn write_file(path: &Path, content: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, content).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
