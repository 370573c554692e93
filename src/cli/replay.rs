//! `crumb replay <session-dir | transcript.jsonl | session id> [--json] [--pipeline PATH]`: fold a
//! transcript through the reducer, run no effect, and print the final state.
//!
//! The table comes from, in order: the session folder's frozen pipeline (`meta.json` names it),
//! `--pipeline`, or the built-in copy of `pipelines/casual.yaml`. Foreign (reference) transcripts
//! replay too: lines in legacy shapes are mapped, lines that cannot be read are listed, and the
//! exit code is still 0. `USAGE_ERROR` when the transcript or the pipeline cannot be read at all.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::output::print;
use crate::engine::Replay;
use crate::engine::ask::duration;
use crate::engine::guards::DIMENSIONS;
use crate::engine::state::{EventSummary, State, VerdictRecord};
use crate::pipeline::table::TransitionTable;
use crate::runtime::session::{META_FILE, SessionDir, TRANSCRIPT_FILE};
use crate::runtime::session_dir::{compile_frozen, compile_source, fold_transcript};

/// The casual pipeline shipped in the binary: the table of last resort.
const BUILT_IN_CASUAL: &str = include_str!("../../pipelines/casual.yaml");

/// Arguments of `crumb replay`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A session directory, a transcript file, or a session id (or unique prefix).
    pub session: String,
    /// Print the full state (and what was read) as JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// The pipeline to replay against when the session has no frozen copy.
    #[arg(long, value_name = "PATH")]
    pub pipeline: Option<PathBuf>,
}

pub fn run(args: &Args) -> ExitCode {
    let loaded = match load(&args.session, args.pipeline.as_deref(), 0) {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("crumb replay: {message}");
            return crate::exit_codes::exit(crate::exit_codes::USAGE_ERROR);
        }
    };
    let text = if args.json {
        let value =
            serde_json::json!({ "state": loaded.replay.state, "replay": loaded.replay.stats });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    } else {
        summary(&loaded)
    };
    print(&text, "replay")
}

/// A transcript folded through its table.
pub(crate) struct Loaded {
    pub transcript: PathBuf,
    /// Where the table came from, for people.
    pub table_origin: String,
    pub table: TransitionTable,
    pub replay: Replay,
    /// The last events read (as many as asked for).
    pub recent: VecDeque<EventSummary>,
}

/// Find the transcript and table for `reference`, then fold it, keeping the last `keep` events.
pub(crate) fn load(
    reference: &str,
    pipeline: Option<&Path>,
    keep: usize,
) -> Result<Loaded, String> {
    let (transcript, session_dir) = locate(reference)?;
    let session = session_dir.and_then(|dir| SessionDir::open(dir).ok());
    let (table, table_origin) = table_for(session.as_ref(), pipeline)?;
    let mut recent = VecDeque::with_capacity(keep);
    let replay = fold_transcript(&transcript, &table, |state| {
        if keep > 0
            && let Some(last) = &state.last_event
        {
            if recent.len() == keep {
                recent.pop_front();
            }
            recent.push_back(last.clone());
        }
    })
    .map_err(|e| e.to_string())?;
    Ok(Loaded {
        transcript,
        table_origin,
        table,
        replay,
        recent,
    })
}

/// The transcript file and, when there is one, the session directory.
fn locate(reference: &str) -> Result<(PathBuf, Option<PathBuf>), String> {
    let path = Path::new(reference);
    if path.is_file() {
        let parent = path
            .parent()
            .filter(|dir| dir.join(META_FILE).is_file())
            .map(Path::to_path_buf);
        return Ok((path.to_path_buf(), parent));
    }
    if path.is_dir() {
        let transcript = path.join(TRANSCRIPT_FILE);
        if !transcript.is_file() {
            return Err(format!("{} has no {TRANSCRIPT_FILE}", path.display()));
        }
        let session = path.join(META_FILE).is_file().then(|| path.to_path_buf());
        return Ok((transcript, session));
    }
    let home = crate::runtime::home::CrumbHome::from_env()
        .map_err(|_| format!("{reference}: no such file or directory"))?;
    let project = crate::runtime::home::Project::current().ok();
    match crate::runtime::resolve::resolve(&home, project.as_ref(), reference) {
        Ok(session) => Ok((session.transcript(), Some(session.path().to_path_buf()))),
        Err(err) => Err(format!(
            "{reference}: no such file or directory, and not a session: {err}"
        )),
    }
}

/// The session's frozen pipeline, else `--pipeline`, else the built-in casual pipeline.
fn table_for(
    session: Option<&SessionDir>,
    pipeline: Option<&Path>,
) -> Result<(TransitionTable, String), String> {
    let frozen = session.and_then(|dir| {
        let meta = dir.read_meta().ok()?;
        Some(dir.frozen_pipeline(&meta)).filter(|p| p.is_file())
    });
    let compiled = match frozen.as_deref().or(pipeline) {
        Some(path) => compile_frozen(path).map(|t| (t, path.display().to_string())),
        None => compile_source(BUILT_IN_CASUAL, Path::new("pipelines/casual.yaml"))
            .map(|t| (t, "built-in casual".to_owned())),
    };
    compiled.map_err(|e| e.to_string())
}

/// The human summary of a replay.
fn summary(loaded: &Loaded) -> String {
    let state = &loaded.replay.state;
    let read = &loaded.replay.stats;
    let limits = &loaded.table.limits;
    let mut out = String::new();
    let _ = writeln!(out, "transcript  {}", loaded.transcript.display());
    let _ = writeln!(
        out,
        "pipeline    {} ({})",
        loaded.table.name, loaded.table_origin
    );
    let _ = writeln!(
        out,
        "session     {}",
        state.session_id.as_deref().unwrap_or("(none)")
    );
    let _ = writeln!(out, "outcome     {}", outcome(state));
    if let Some(reason) = state
        .done
        .as_ref()
        .and_then(|d| d.recorded_reason.as_deref())
    {
        let _ = writeln!(
            out,
            "            (the transcript's own done line says: {reason})"
        );
    }
    let _ = writeln!(
        out,
        "events      {} folded of {} lines · {} mapped from legacy shapes · {} skipped · {} effects (not run)",
        read.events, read.lines, read.mapped, read.skipped, read.effects
    );
    match &state.verification.latest {
        Some(record) => write_verdict(&mut out, record),
        None => out.push_str("verdict     none yet\n"),
    }
    let _ = writeln!(
        out,
        "budgets     verifications {}/{} · respecs {}/{} · tokens {}/{}{} · time {}/{}{} · errors in a row {}/{}",
        state.verification.count,
        limits.max_verify,
        state.budgets.respecs,
        limits.max_respec,
        state.budgets.tokens,
        limits.tokens_hard,
        if state.budgets.tokens_warned {
            " (warned)"
        } else {
            ""
        },
        duration(state.clock.elapsed_ms()),
        duration(limits.wall_clock_hard_ms),
        if state.budgets.wall_clock_warned {
            " (warned)"
        } else {
            ""
        },
        state.budgets.errors_in_a_row,
        limits.stuck_after_errors,
    );
    write_roles(&mut out, loaded);
    if state.verify_aliases > 0 {
        let _ = writeln!(
            out,
            "aliases     {} verify.result line(s) recorded, not counted",
            state.verify_aliases
        );
    }
    write_read_report(&mut out, read);
    out
}

/// One line per role of the table.
fn write_roles(out: &mut String, loaded: &Loaded) {
    let state = &loaded.replay.state;
    out.push_str("roles\n");
    for role in &loaded.table.roles {
        let record = state.roles.get(&role.id).cloned().unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:<14} spawns {} · turns {} · failures {} ({} in a row){}{}{}",
            role.id,
            record.spawns,
            record.turns,
            record.failures_total,
            record.failures_in_a_row,
            record
                .adapter
                .as_deref()
                .map(|a| format!(" · adapter {a}"))
                .unwrap_or_default(),
            if record.paused { " · paused" } else { "" },
            if record.queued.is_some() {
                " · spawn queued"
            } else {
                ""
            },
        );
    }
}

/// Skipped lines and legacy mappings.
fn write_read_report(out: &mut String, stats: &crate::engine::replay::ReplayStats) {
    if !stats.skipped_lines.is_empty() {
        out.push_str("skipped lines\n");
        for skipped in &stats.skipped_lines {
            let _ = writeln!(out, "  line {}: {}", skipped.line, skipped.reason);
        }
        if stats.skipped > stats.skipped_lines.len() as u64 {
            let _ = writeln!(
                out,
                "  … and {} more",
                stats.skipped - stats.skipped_lines.len() as u64
            );
        }
    }
    if !stats.mapping_changes.is_empty() {
        out.push_str("legacy mapping\n");
        for (change, count) in &stats.mapping_changes {
            let _ = writeln!(out, "  {change} ×{count}");
        }
    }
}

/// `done — <reason> (outcome <word>)`, `awaiting a person …`, `paused`, or `running`. A `done`
/// line that recorded no outcome (transcripts from before outcomes) shows it as unknown: the
/// reason's spelling is never read as one.
pub(crate) fn outcome(state: &State) -> String {
    if let Some(done) = &state.done {
        let outcome = done
            .outcome
            .map_or("unknown: the done line recorded none", |o| o.as_str());
        let degraded = if state.degraded() { ", degraded" } else { "" };
        return format!("done — {} (outcome {outcome}{degraded})", done.reason);
    }
    if let Some(awaiting) = &state.awaiting {
        return if awaiting.is_verdict() {
            format!(
                "awaiting a person (/approve or /veto) on verdict {}",
                awaiting.judge_event_id
            )
        } else {
            format!(
                "awaiting a person on `{}` ({})",
                awaiting.on, awaiting.judge_event_id
            )
        };
    }
    let next = state
        .next_role
        .as_deref()
        .map(|r| format!(" (last spawned: {r})"))
        .unwrap_or_default();
    if state.paused {
        format!("paused{next}")
    } else {
        format!("not finished{next}")
    }
}

fn write_verdict(out: &mut String, record: &VerdictRecord) {
    let raw_verdict = record
        .raw
        .verdict
        .map_or_else(|| "-".to_owned(), |v| v.to_string());
    let raw_aggregate = record
        .raw
        .aggregate
        .map_or_else(|| "-".to_owned(), |a| a.to_string());
    let _ = writeln!(
        out,
        "verdict     {} {} (claimed {} {}) · severity {}{}",
        record.corrected.verdict,
        record.corrected.aggregate,
        raw_verdict,
        raw_aggregate,
        record.severity,
        if record.severity_defaulted {
            " (defaulted)"
        } else {
            ""
        }
    );
    out.push_str("scores     ");
    for (index, corrected) in record
        .corrected
        .dimensions
        .iter()
        .enumerate()
        .take(DIMENSIONS)
    {
        let raw = record.raw.dimensions[index];
        let _ = match raw {
            Some(raw) if (raw - corrected).abs() < 1e-9 => {
                write!(out, " D{} {corrected}", index + 1)
            }
            Some(raw) => write!(out, " D{} {raw}→{corrected}", index + 1),
            None => write!(out, " D{} -→{corrected}", index + 1),
        };
    }
    out.push('\n');
    let corrections: Vec<&str> = record.corrections.iter().map(|c| c.as_str()).collect();
    let _ = writeln!(
        out,
        "corrections {}",
        if corrections.is_empty() {
            "none".to_owned()
        } else {
            corrections.join(", ")
        }
    );
}
