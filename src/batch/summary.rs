//! The batch summary: one row per pitch (outcome, score, turns, tokens, cost, wall time), built
//! from each session's folder alone, so a local batch and `--collect` over folders written by
//! other machines give the same table. Printed as a human table, JSON or CSV.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::adapters::Usage;
use crate::runtime::session_dir::SessionDir;
use crate::transcript::reader::each_event;
use crate::transcript::{Event, Kind};

/// One pitch's line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    pub index: usize,
    pub pitch: String,
    /// The session that ran the pitch, once known.
    pub session: Option<String>,
    /// `pass`, `fail`, `partial`, `rejected`, `stopped`; `awaiting`, `unfinished` for a session
    /// that has not ended; `not run` (with `note` saying why).
    pub outcome: String,
    /// The corrected D1–D6 aggregate of the latest verdict (out of 30).
    pub score: Option<f64>,
    /// Agent turns started (spawns over every role).
    pub turns: u32,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    /// From the first to the last event of the transcript.
    pub wall_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the pods of a Kubernetes Job did with the pitch (`--collect` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods: Option<Pods>,
}

/// Per index, what the home's attempt records say the Job's pods did: the pod-level story,
/// beside the session's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Pods {
    /// `ran` (one pod, its session ended), `retried` (more than one pod, the session ended),
    /// `failed` (the last pod exited non-zero: `exit_code`), `killed` (the last pod recorded no
    /// exit: killed by a signal, out of memory, a lost node; or still running), `never started`.
    pub state: &'static str,
    /// Pods that started on this index.
    pub attempts: u32,
    /// The last pod's exit code, when it recorded one.
    pub exit_code: Option<u8>,
}

impl Pods {
    /// The cell of the human table: `ran`, `retried ×2`, `failed (exit 2)`, `killed ×3`.
    fn text(&self) -> String {
        let times = if self.attempts > 1 {
            format!(" ×{}", self.attempts)
        } else {
            String::new()
        };
        match (self.state, self.exit_code) {
            ("failed", Some(code)) => format!("failed{times} (exit {code})"),
            (state, _) => format!("{state}{times}"),
        }
    }
}

impl Row {
    /// A pitch with no session (yet).
    pub(crate) fn not_run(index: usize, pitch: &str, note: impl Into<String>) -> Row {
        Row {
            index,
            pitch: pitch.to_owned(),
            session: None,
            outcome: "not run".into(),
            score: None,
            turns: 0,
            tokens: 0,
            cost_usd: None,
            wall_ms: 0,
            note: Some(note.into()),
            pods: None,
        }
    }

    pub(crate) fn passed(&self) -> bool {
        self.outcome == "pass"
    }

    /// Whether the pitch's session got to a result: an outcome, or a wait for a person.
    pub(crate) fn ended(&self) -> bool {
        matches!(
            self.outcome.as_str(),
            "pass" | "fail" | "partial" | "rejected" | "stopped" | "awaiting"
        )
    }

    /// The row of the session at `path`, folded through its frozen pipeline.
    pub(crate) fn of_session(index: usize, pitch: &str, path: &Path) -> Row {
        let fail = |note: String| Row {
            session: path.file_name().map(|n| n.to_string_lossy().into_owned()),
            outcome: "unreadable".into(),
            ..Row::not_run(index, pitch, note)
        };
        let dir = match SessionDir::open(path) {
            Ok(dir) => dir,
            Err(err) => return fail(err.to_string()),
        };
        let replay = match dir.table().and_then(|table| dir.fold(&table, |_| {})) {
            Ok(replay) => replay,
            Err(err) => return fail(err.to_string()),
        };
        let state = &replay.state;
        let outcome = match (&state.done, &state.awaiting) {
            (Some(done), _) => done.outcome.map_or("unknown", |o| o.as_str()).to_owned(),
            (None, Some(_)) => "awaiting".to_owned(),
            (None, None) => "unfinished".to_owned(),
        };
        Row {
            index,
            pitch: pitch.to_owned(),
            session: Some(dir.id().to_owned()),
            outcome,
            score: state
                .verification
                .latest
                .as_ref()
                .map(|v| v.corrected.aggregate),
            turns: state.roles.values().map(|r| r.spawns).sum(),
            tokens: state.budgets.tokens,
            cost_usd: cost(&dir.transcript()),
            wall_ms: state.clock.elapsed_ms(),
            note: None,
            pods: None,
        }
    }
}

/// Σ `cost_usd` of the session's `agent.stop` events (the adapters' usage tap), if any reported.
fn cost(transcript: &Path) -> Option<f64> {
    let file = std::fs::File::open(transcript).ok()?;
    let mut total = Usage::default();
    each_event(
        std::io::BufReader::with_capacity(64 * 1024, file),
        |event: Event| {
            if let (Kind::AgentStop, Some(metadata)) = (&event.kind, &event.metadata) {
                total.absorb(&Usage::from_metadata(metadata));
            }
        },
        |_| {},
    );
    total.cost_usd
}

fn score(row: &Row) -> String {
    row.score.map_or_else(|| "-".into(), |s| format!("{s:.1}"))
}

fn cost_text(row: &Row) -> String {
    row.cost_usd
        .map_or_else(|| "-".into(), |c| format!("{c:.4}"))
}

fn wall(row: &Row) -> String {
    #[allow(clippy::cast_precision_loss)]
    let seconds = row.wall_ms as f64 / 1000.0;
    format!("{seconds:.1}s")
}

/// The human table, one line per pitch and a totals line.
pub(crate) fn human(rows: &[Row]) -> String {
    let width = rows
        .iter()
        .map(|r| r.pitch.chars().count().min(40))
        .max()
        .unwrap_or(5)
        .max(5);
    // The pods column only where a Job's pods recorded attempts (`--collect`).
    let pods: Vec<String> = rows
        .iter()
        .map(|r| r.pods.as_ref().map_or_else(|| "-".into(), Pods::text))
        .collect();
    let pods_width = if rows.iter().any(|r| r.pods.is_some()) {
        pods.iter()
            .map(|p| p.chars().count())
            .max()
            .unwrap_or(4)
            .max(4)
    } else {
        0
    };
    let column = |text: &str| {
        if pods_width == 0 {
            String::new()
        } else {
            format!("{text:<pods_width$}  ")
        }
    };
    let mut out = format!(
        "{:>3}  {:<width$}  {}{:<10}  {:>5}  {:>5}  {:>8}  {:>8}  {:>7}  session\n",
        "#",
        "pitch",
        column("pods"),
        "outcome",
        "score",
        "turns",
        "tokens",
        "cost",
        "wall"
    );
    for (row, pods) in rows.iter().zip(&pods) {
        let pitch: String = row.pitch.chars().take(40).collect();
        let _ = writeln!(
            out,
            "{:>3}  {pitch:<width$}  {}{:<10}  {:>5}  {:>5}  {:>8}  {:>8}  {:>7}  {}{}",
            row.index,
            column(pods),
            row.outcome,
            score(row),
            row.turns,
            row.tokens,
            cost_text(row),
            wall(row),
            row.session.as_deref().unwrap_or("-"),
            row.note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default(),
        );
    }
    let passed = rows.iter().filter(|r| r.passed()).count();
    let _ = writeln!(
        out,
        "{passed}/{} passed · {} tokens · {} turns",
        rows.len(),
        rows.iter().map(|r| r.tokens).sum::<u64>(),
        rows.iter().map(|r| r.turns).sum::<u32>(),
    );
    if pods_width > 0 {
        let states = ["ran", "retried", "failed", "killed", "never started"];
        let counts: Vec<String> = states
            .iter()
            .map(|state| {
                let n = rows
                    .iter()
                    .filter(|r| r.pods.as_ref().is_some_and(|p| p.state == *state))
                    .count();
                format!("{n} {state}")
            })
            .collect();
        let _ = writeln!(out, "pods: {}", counts.join(" · "));
    }
    out
}

/// CSV with a header row (RFC 4180 quoting by the `csv` crate).
pub(crate) fn csv(rows: &[Row]) -> Result<String, String> {
    let mut writer = ::csv::Writer::from_writer(Vec::new());
    let header = [
        "index", "pitch", "session", "outcome", "score", "turns", "tokens", "cost_usd", "wall_ms",
        "note",
    ];
    writer.write_record(header).map_err(|e| e.to_string())?;
    for row in rows {
        writer
            .write_record([
                row.index.to_string(),
                row.pitch.clone(),
                row.session.clone().unwrap_or_default(),
                row.outcome.clone(),
                row.score.map(|s| s.to_string()).unwrap_or_default(),
                row.turns.to_string(),
                row.tokens.to_string(),
                row.cost_usd.map(|c| c.to_string()).unwrap_or_default(),
                row.wall_ms.to_string(),
                row.note.clone().unwrap_or_default(),
            ])
            .map_err(|e| e.to_string())?;
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}
