//! `crumb why <session> [--json]`: why a session ended, or what it waits for — the engine's own
//! reasons ([`crate::engine::why`]): the route that ended it or the wait and what a person can
//! say, each guard correction, each budget against its limit, failed turns with their class and
//! hint, swaps, and the QA checks that failed with the end of their output.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use crate::engine::why::{Why, explain};

/// Arguments of `crumb why`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A session directory, a transcript file, or a session id (or unique prefix).
    pub session: String,
    /// The pipeline to read the session with when it has no frozen copy.
    #[arg(long, value_name = "PATH")]
    pub pipeline: Option<PathBuf>,
    /// Print the reasons as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let chosen = super::replay::Choice {
        pipeline: args.pipeline.as_deref(),
        force: false,
    };
    let (transcript, table) =
        super::replay::locate_with_table(&args.session, chosen).map_err(CommandError::usage)?;
    let (events, _) = crate::transcript::reader::read_path(&transcript)
        .map_err(|e| CommandError::usage(format!("cannot read {}: {e}", transcript.display())))?;
    let why = explain(&table, &events);
    let text = if args.json {
        serde_json::to_string_pretty(&why).map_err(CommandError::failure_from)? + "\n"
    } else {
        render(&why)
    };
    super::stdout::print(&text)?;
    Ok(ExitStatus::SUCCESS)
}

/// The reasons for people: the headline, then one block per kind of cause that has entries.
fn render(why: &Why) -> String {
    let mut out = format!("{}\n", why.headline);
    if let Some(ended) = &why.ended {
        match &ended.route {
            Some(route) => {
                let _ = writeln!(
                    out,
                    "  ended by route #{} ({}) on event {}",
                    route.number, route.label, ended.event_id
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  stopped on event {} by a limit, not by a route",
                    ended.event_id
                );
            }
        }
    }
    if let Some(waiting) = &why.waiting {
        let _ = writeln!(
            out,
            "  waiting on `{}` since event {}; crumb say <session> {}",
            waiting.on,
            waiting.event_id,
            waiting.say.join(" | ")
        );
    }
    if !why.corrections.is_empty() {
        out.push_str("\nguards\n");
        for c in &why.corrections {
            let claimed = c
                .claimed_aggregate
                .map_or_else(|| "-".to_owned(), |a| a.to_string());
            let verdict = c.claimed_verdict.as_deref().unwrap_or("-");
            let _ = writeln!(
                out,
                "  {}  {}: aggregate {claimed} → {}, verdict {verdict} → {}",
                c.event_id,
                c.corrections.join(", "),
                c.aggregate,
                c.verdict
            );
        }
    }
    out.push_str("\nbudgets\n");
    for b in &why.budgets {
        let _ = writeln!(out, "  {:<14} {} of {}", b.name, b.used, b.limit);
    }
    if !why.failed_turns.is_empty() {
        out.push_str("\nfailed turns\n");
        for t in &why.failed_turns {
            let class = t
                .class
                .as_deref()
                .map(|c| format!(" [{c}]"))
                .unwrap_or_default();
            let hint = t
                .hint
                .as_deref()
                .map(|h| format!(" — {h}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {}  {}: {}{class}{hint}",
                t.event_id, t.role, t.reason
            );
        }
    }
    if !why.swaps.is_empty() {
        out.push_str("\nswaps (degraded)\n");
        for s in &why.swaps {
            let _ = writeln!(
                out,
                "  {}: {} → {} ({})",
                s.role,
                s.from.as_deref().unwrap_or("?"),
                s.to,
                s.cause
            );
        }
    }
    if !why.qa_failures.is_empty() {
        out.push_str("\nfailed QA checks\n");
        for q in &why.qa_failures {
            let _ = writeln!(
                out,
                "  {}  {}: {}",
                q.event_id,
                q.check,
                q.findings.join("; ")
            );
            for line in q.tail.lines().filter(|l| !l.trim().is_empty()) {
                let _ = writeln!(out, "      {line}");
            }
        }
    }
    out
}
