//! `crumb replay <session-dir | transcript.jsonl | session id> [--json] [--pipeline PATH]`: fold a
//! transcript through the reducer, run no effect, and print the final state.
//!
//! Replay never guesses the pipeline. The table comes from the session folder's frozen pipeline
//! (`meta.json` names it); else from `--pipeline FILE`, whose content hash (computed as freezing
//! computes it) must equal the one `session.start` recorded — a mismatch is an error naming both
//! unless `--force`, and a transcript that records no hash (a legacy one) takes the file as given
//! and says so; else it is an error. Foreign (reference) transcripts replay too: lines in legacy
//! shapes are mapped, lines that cannot be read are listed, and the exit code is still 0.
//! `USAGE_ERROR` when the transcript or the pipeline cannot be read or chosen.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::error::{CommandError, ExitStatus};
use crate::adapters::Usage;
use crate::engine::Replay;
use crate::engine::ask::duration;
use crate::engine::state::{EventSummary, State, VerdictRecord};
use crate::pipeline::table::TransitionTable;
use crate::runtime::freeze::{FreezeSource, content_hash};
use crate::runtime::session_dir::{META_FILE, SessionDir, TRANSCRIPT_FILE};
use crate::runtime::session_read::{
    compile_frozen, compile_frozen_recording, fold_transcript, recorded_pipeline,
};
use crate::runtime::status_fold::fold_for_status;

/// Arguments of `crumb replay`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A session directory, a transcript file, or a session id (or unique prefix).
    pub session: String,
    /// Print the full state (and what was read) as JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// The pipeline to replay against when the session has no frozen copy; its hash must match
    /// the one `session.start` recorded.
    #[arg(long, value_name = "PATH")]
    pub pipeline: Option<PathBuf>,
    /// Replay against `--pipeline` even when its hash differs from the recorded one.
    #[arg(long, requires = "pipeline")]
    pub force: bool,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let chosen = Choice {
        pipeline: args.pipeline.as_deref(),
        force: args.force,
    };
    let loaded = load(&args.session, chosen, 0).map_err(CommandError::usage)?;
    let text = if args.json {
        let value =
            serde_json::json!({ "state": loaded.replay.state, "replay": loaded.replay.stats });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    } else {
        summary(&loaded)
    };
    super::stdout::print(&text)?;
    Ok(ExitStatus::SUCCESS)
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

/// The pipeline a person named for a transcript without a frozen copy.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Choice<'a> {
    /// `--pipeline`.
    pub pipeline: Option<&'a Path>,
    /// `--force`: accept a `--pipeline` whose hash differs from the recorded one.
    pub force: bool,
}

/// Find the transcript and table for `reference`, then fold it, keeping the last `keep` events.
pub(crate) fn load(reference: &str, chosen: Choice<'_>, keep: usize) -> Result<Loaded, String> {
    let (transcript, session) = locate_session(reference)?;
    let (table, table_origin) = table_for(session.as_ref(), &transcript, chosen)?;
    fold_all(transcript, table, table_origin, keep)
}

/// The transcript `reference` names and the table it is read with (the rules of [`load`]),
/// for readers that fold it their own way (`crumb why`).
pub(crate) fn locate_with_table(
    reference: &str,
    chosen: Choice<'_>,
) -> Result<(PathBuf, TransitionTable), String> {
    let (transcript, session) = locate_session(reference)?;
    let (table, _) = table_for(session.as_ref(), &transcript, chosen)?;
    Ok((transcript, table))
}

/// [`load`] for `crumb status`: a session's transcript is folded from its snapshot when it has a
/// valid one ([`fold_for_status`]), which also sums each role's usage (`None` for a transcript
/// outside a session folder: it gets no snapshot).
pub(crate) fn load_for_status(
    reference: &str,
    chosen: Choice<'_>,
    keep: usize,
) -> Result<(Loaded, Option<IndexMap<String, Usage>>), String> {
    let (transcript, session) = locate_session(reference)?;
    let (table, table_origin) = table_for(session.as_ref(), &transcript, chosen)?;
    if session.is_none() {
        return Ok((fold_all(transcript, table, table_origin, keep)?, None));
    }
    let folded = fold_for_status(&transcript, &table, keep).map_err(|e| e.to_string())?;
    let loaded = Loaded {
        transcript,
        table_origin,
        table,
        replay: folded.replay,
        recent: folded.recent,
    };
    Ok((loaded, Some(folded.usage)))
}

fn locate_session(reference: &str) -> Result<(PathBuf, Option<SessionDir>), String> {
    let (transcript, session_dir) = locate(reference)?;
    Ok((
        transcript,
        session_dir.and_then(|dir| SessionDir::open(dir).ok()),
    ))
}

fn fold_all(
    transcript: PathBuf,
    table: TransitionTable,
    table_origin: String,
    keep: usize,
) -> Result<Loaded, String> {
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
pub(crate) fn locate(reference: &str) -> Result<(PathBuf, Option<PathBuf>), String> {
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
    let home = crate::home::CrumbHome::from_env()
        .map_err(|_| format!("{reference}: no such file or directory"))?;
    let project = crate::home::Project::current().ok();
    match crate::runtime::resolve::resolve(&home, project.as_ref(), reference) {
        Ok(session) => Ok((session.transcript(), Some(session.path().to_path_buf()))),
        Err(err) => Err(format!(
            "{reference}: no such file or directory, and not a session: {err}"
        )),
    }
}

/// The session's frozen pipeline, else `--pipeline` when its hash matches `session.start`'s
/// (or `--force`, or the transcript records none), else an error: never a guess.
fn table_for(
    session: Option<&SessionDir>,
    transcript: &Path,
    chosen: Choice<'_>,
) -> Result<(TransitionTable, String), String> {
    let frozen = session.and_then(|dir| {
        let meta = dir.read_meta().ok()?;
        Some(dir.frozen_pipeline(&meta)).filter(|p| p.is_file())
    });
    if let Some(frozen) = frozen {
        let table = compile_frozen(&frozen).map_err(|e| e.to_string())?;
        return Ok((table, format!("frozen, {}", frozen.display())));
    }
    let recorded = recorded_pipeline(transcript).map_err(|e| e.to_string())?;
    let Some(path) = chosen.pipeline else {
        return Err(match recorded {
            Some((name, hash)) => format!(
                "{}: no frozen pipeline; session.start recorded pipeline `{name}` ({hash}): \
                 pass that file with --pipeline FILE",
                transcript.display()
            ),
            None => format!(
                "{}: no frozen pipeline and the transcript records none: \
                 pass the pipeline it ran with, --pipeline FILE",
                transcript.display()
            ),
        });
    };
    let shown = path.display();
    let (table, read) = compile_frozen_recording(path).map_err(|e| e.to_string())?;
    let origin = match recorded {
        None => format!(
            "--pipeline {shown}; the transcript records no pipeline hash, so it is taken as given"
        ),
        Some((_, expected)) => {
            let source = FreezeSource {
                path,
                table: &table,
                read: &read,
            };
            let actual = content_hash(source).map_err(|e| format!("--pipeline {shown}: {e}"))?;
            if actual == expected {
                format!("--pipeline {shown}, hash matches session.start")
            } else if chosen.force {
                format!(
                    "--pipeline {shown} with --force: its hash {actual} differs from session.start's {expected}"
                )
            } else {
                return Err(format!(
                    "--pipeline {shown}: its hash {actual} differs from the {expected} session.start \
                     recorded, so it is not the pipeline this session ran; pass that one, or --force \
                     to replay against this file anyway"
                ));
            }
        }
    };
    Ok((table, origin))
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
    if state.refused_events > 0 {
        let _ = writeln!(
            out,
            "refused     {} event(s) from roles of kinds they may not write (not acted on)",
            state.refused_events
        );
    }
    match &state.verification.latest {
        Some(record) => write_verdict(&mut out, record, &loaded.table.scoring.rubric),
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

fn write_verdict(
    out: &mut String,
    record: &VerdictRecord,
    rubric: &[crate::pipeline::rubric::DimensionSpec],
) {
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
    for (index, corrected) in record.corrected.dimensions.iter().enumerate() {
        let raw = record.raw.dimensions.get(index).copied().flatten();
        let id = rubric.get(index).map_or("?", |d| d.id.as_str());
        let _ = match raw {
            Some(raw) if (raw - corrected).abs() < 1e-9 => write!(out, " {id} {corrected}"),
            Some(raw) => write!(out, " {id} {raw}→{corrected}"),
            None => write!(out, " {id} -→{corrected}"),
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
