//! `crumb status <session-dir | transcript.jsonl | session id> [--pipeline PATH]`: where a session
//! is — its outcome and progress, its rounds (the story line), the last 10 events and the scorecard (the verifier's claim next
//! to the corrected values). Computed by replaying the transcript, like `crumb replay`.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use super::replay::{load_for_status, outcome};
use super::status_usage::usage_block;
use crate::engine::ask::duration;
use crate::engine::state::State;
use crate::runtime::status_fold::usage_by_role;
use crate::runtime::story::{STATUS_STORY_EVENTS, story_of};

/// How many recent events `status` lists.
const RECENT: usize = 10;
/// Longest body preview per listed event (characters).
const BODY_CHARS: usize = 60;

/// Arguments of `crumb status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A session directory, a transcript file, or a session id (or unique prefix).
    pub session: String,
    /// The pipeline to read the session with when it has no frozen copy.
    #[arg(long, value_name = "PATH")]
    pub pipeline: Option<PathBuf>,
    /// Print the folded state, what was read and the last events as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let chosen = super::replay::Choice {
        pipeline: args.pipeline.as_deref(),
        force: false,
    };
    let (loaded, usage) =
        load_for_status(&args.session, chosen, RECENT).map_err(CommandError::usage)?;
    let state = &loaded.replay.state;
    let inputs = crate::runtime::session_read::recorded_inputs(&loaded.transcript);
    // The rounds, told by the engine's own fold (a second pass: left out of very long sessions).
    let story = (loaded.replay.stats.events <= STATUS_STORY_EVENTS)
        .then(|| story_of(&loaded.transcript, &loaded.table).ok())
        .flatten();
    let usage = usage.unwrap_or_else(|| {
        std::fs::File::open(&loaded.transcript)
            .map(|file| usage_by_role(&file, u64::MAX, None))
            .unwrap_or_default()
    });
    if args.json {
        let mut total = crate::adapters::Usage::default();
        for role in usage.values() {
            total.absorb(role);
        }
        total.model = None;
        let value = serde_json::json!({
            "usage": { "by_role": &usage, "total": total },
            "inputs": inputs,
            "state": state,
            "rubric": loaded.table.scoring.rubric,
            "replay": loaded.replay.stats,
            "recent": loaded.recent,
            "story": story,
        });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        super::stdout::print(&text)?;
        return Ok(ExitStatus::SUCCESS);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "session   {} · {} · {}",
        state.session_id.as_deref().unwrap_or("(none)"),
        loaded.table.name,
        outcome(state)
    );
    for (name, value) in &inputs {
        let _ = writeln!(out, "input     {name} = {value}");
    }
    let _ = writeln!(out, "progress  {}", progress(state, &loaded.table));
    let skipped = loaded.replay.stats.skipped;
    let _ = writeln!(
        out,
        "events    {} in {}{}",
        loaded.replay.stats.events,
        duration(state.clock.elapsed_ms()),
        if skipped > 0 {
            format!(" ({skipped} unreadable line(s) skipped)")
        } else {
            String::new()
        }
    );
    if state.refused_events > 0 {
        let _ = writeln!(
            out,
            "refused   {} event(s) a role may not write (ignored; see `crumb explain <kind>`)",
            state.refused_events
        );
    }
    out.push_str(&rounds_block(story.as_ref()));
    let _ = writeln!(out, "\nlast {} events", loaded.recent.len());
    for event in &loaded.recent {
        let time = event.ts.get(11..23).unwrap_or(&event.ts);
        let body = event.body.as_deref().map(preview).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {time}  {:<13} {:<18} {body}",
            event.from, event.kind
        );
    }
    out.push('\n');
    out.push_str(&usage_block(&usage));
    out.push('\n');
    out.push_str(&scorecard(state, &loaded.table.scoring.rubric));
    if let Some(dir) = loaded.transcript.parent()
        && let Some(line) =
            crate::runtime::artifact_store::health::check_session(dir).problem_line()
    {
        let _ = writeln!(out, "\n{line}");
    }
    let dry_run = crate::runtime::session_read::recorded_dry_run(&loaded.transcript);
    let _ = writeln!(
        out,
        "\nwhy       {} (`crumb why` says more)",
        crate::engine::why::headline(&loaded.table, state, dry_run)
    );
    super::stdout::print(&out)?;
    Ok(ExitStatus::SUCCESS)
}

/// Which roles have run and what the latest QA run said.
/// The `rounds` block: the story line, one row per round (or why it is not told).
fn rounds_block(story: Option<&crate::engine::story::Story>) -> String {
    let mut out = String::new();
    match story {
        Some(story) if !story.rounds.is_empty() => {
            let _ = writeln!(out, "\nrounds");
            for line in story.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        Some(_) => {}
        None => {
            let _ = writeln!(
                out,
                "\nrounds    not told for a session over {STATUS_STORY_EVENTS} events (see Studio or `crumb export`)"
            );
        }
    }
    out
}

fn progress(state: &State, table: &crate::pipeline::table::TransitionTable) -> String {
    let mut parts: Vec<String> = table
        .roles
        .iter()
        .map(|role| {
            let record = state.roles.get(&role.id);
            let turns = record.map_or(0, |r| r.turns);
            let spawns = record.map_or(0, |r| r.spawns);
            format!("{} {turns} turn(s)/{spawns} spawn(s)", role.id)
        })
        .collect();
    parts.push(match &state.qa {
        Some(qa) => match qa.exec_exit_code {
            Some(code) => format!("QA exit {code}"),
            None => "QA without an exit code".to_owned(),
        },
        None => "no QA yet".to_owned(),
    });
    parts.join(" · ")
}

/// The declared dimensions, aggregate and verdict of the latest judge: claimed → corrected; after a
/// join, also the combined verdict the routes acted on and each branch's.
fn scorecard(state: &State, rubric: &[crate::pipeline::rubric::DimensionSpec]) -> String {
    let Some(record) = &state.verification.latest else {
        return "scorecard  no judge.score yet\n".to_owned();
    };
    let mut out = String::from("scorecard  claimed → corrected\n");
    for (index, corrected) in record.corrected.dimensions.iter().enumerate() {
        let claimed = record
            .raw
            .dimensions
            .get(index)
            .copied()
            .flatten()
            .map_or_else(|| "-".to_owned(), |v| v.to_string());
        let id = rubric.get(index).map_or("?", |d| d.id.as_str());
        let _ = writeln!(out, "  {id:<10} {claimed} → {corrected}");
    }
    let claimed = record
        .raw
        .aggregate
        .map_or_else(|| "-".to_owned(), |v| v.to_string());
    let _ = writeln!(
        out,
        "  aggregate  {claimed} → {}",
        record.corrected.aggregate
    );
    let claimed = record
        .raw
        .verdict
        .map_or_else(|| "-".to_owned(), |v| v.to_string());
    let _ = writeln!(
        out,
        "  verdict    {claimed} → {} ({})",
        record.corrected.verdict, record.severity
    );
    if let Some(joined) = &state.verification.routed_join {
        let branches: Vec<String> = joined
            .branches
            .iter()
            .map(|b| {
                format!(
                    "{} {} × {} ({})",
                    b.role, b.verdict, b.severity, b.aggregate
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "  joined     {} × {} (aggregate {}, {} of {}): {}",
            joined.verdict,
            joined.severity,
            joined.aggregate,
            joined.combine,
            joined.branches.len(),
            branches.join(", ")
        );
    }
    let corrections: Vec<&str> = record.corrections.iter().map(|c| c.as_str()).collect();
    let _ = writeln!(
        out,
        "  corrections {}",
        if corrections.is_empty() {
            "none".to_owned()
        } else {
            corrections.join(", ")
        }
    );
    out
}

/// One line of at most [`BODY_CHARS`] characters.
pub(crate) fn preview(body: &str) -> String {
    let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= BODY_CHARS {
        flat
    } else {
        let cut: String = flat.chars().take(BODY_CHARS - 1).collect();
        format!("{cut}…")
    }
}
