//! The summary at the end of `crumb run`, `crumb resume` and `crumb fork`: how the session
//! ended, the verdict, swaps, the last agent error, the inputs and where to look next, as the
//! value `--json` prints ([`of`]) and as lines for people ([`print()`]).

use crate::fs::stdout::outln;
use serde_json::{Value, json};

use super::studio_link::StudioLink;
use crate::runtime::coordinator::Outcome;
use crate::runtime::run_config::Ending;
use crate::runtime::session_dir::SessionDir;

/// The summary's lines, from the same value `--json` prints.
pub(crate) fn print(summary: &Value) {
    let text = |key: &str| {
        summary
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    outln!();
    match summary.get("reason").and_then(Value::as_str) {
        Some(reason) => outln!(
            "ended    {reason} (outcome {}, exit {})",
            summary
                .get("outcome")
                .and_then(Value::as_str)
                .unwrap_or("unknown"),
            summary
                .get("exit_code")
                .map(ToString::to_string)
                .unwrap_or_default()
        ),
        None if text("status") == "interrupted" => outln!(
            "stopped  interrupted; continue with crumb resume {}",
            text("session_id")
        ),
        None => outln!(
            "waiting  for a person: crumb say {} /approve   (or /veto <why>), then crumb resume {}",
            text("session_id"),
            text("session_id")
        ),
    }
    if let Some(verdict) = summary.get("verdict").filter(|v| !v.is_null()) {
        super::verdict::print_verdict(verdict);
    }
    for swap in summary
        .get("swaps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let word = |key: &str| swap.get(key).and_then(Value::as_str).unwrap_or("?");
        outln!(
            "DEGRADED {}: {} → {} ({})",
            word("role"),
            word("from"),
            word("to"),
            word("cause")
        );
    }
    if let Some(error) = summary.get("agent_error").filter(|e| !e.is_null()) {
        let word = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("?");
        outln!(
            "error    {} ({}): {}",
            word("role"),
            word("class"),
            word("message")
        );
        if let Some(hint) = error.get("hint").and_then(Value::as_str) {
            outln!("fix      {hint}");
        }
    }
    if let Some(game) = summary.get("game").and_then(Value::as_str) {
        outln!("game     {game}");
    }
    if let Some(time) = summary.get("timings_ms").and_then(super::timings::line) {
        outln!("time     {time}");
    }
    for (name, value) in summary
        .get("inputs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        outln!("input    {name} = {value}");
    }
    print_otlp(summary);
    if let Some(studio) = summary.get("studio") {
        let link = StudioLink {
            url: studio
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            running: studio
                .get("running")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        outln!("{}", link.line());
    }
}

/// The live export's line: how many spans reached the collector and how many could not.
fn print_otlp(summary: &Value) {
    let Some(otlp) = summary.get("otlp").filter(|v| !v.is_null()) else {
        return;
    };
    let count = |key: &str| otlp.get(key).and_then(Value::as_u64).unwrap_or(0);
    let why = otlp
        .get("last_error")
        .and_then(Value::as_str)
        .map(|e| format!(" ({e})"))
        .unwrap_or_default();
    outln!(
        "otlp     {} spans sent to {}, {} could not be sent{why}",
        count("sent"),
        otlp.get("endpoint").and_then(Value::as_str).unwrap_or("?"),
        count("not_sent"),
    );
}

/// The final summary (also what `--json` prints).
pub(crate) fn of(dir: &SessionDir, outcome: &Outcome) -> Value {
    let state = &outcome.state;
    let verdict = super::verdict::verdict_json(state);
    let entry = dir.artifacts().join("game/index.html");
    // One read of the transcript serves usage, the last agent error and the timings.
    let events = crate::transcript::reader::read_path(&dir.transcript())
        .ok()
        .map(|(e, _)| e);
    let (status, ended, reason) = match &outcome.ending {
        Ending::Done { outcome, reason } => ("done", *outcome, Some(reason.clone())),
        Ending::Awaiting => ("awaiting", None, None),
        Ending::Interrupted => ("interrupted", None, None),
    };
    json!({
        "session_id": dir.id(),
        "folder": dir.path().display().to_string(),
        "status": status,
        "outcome": ended,
        "reason": reason,
        "exit_code": outcome.ending.exit_code(),
        "degraded": state.degraded(),
        "swaps": crate::runtime::run_config::swaps_json(state),
        "verdict": verdict,
        "verifications": state.verification.count,
        "events": state.events,
        "tokens": state.budgets.tokens,
        "usage": events.as_deref().map_or(Value::Null, usage_json),
        "game": entry.is_file().then(|| entry.display().to_string()),
        "agent_error": events.as_deref().map_or(Value::Null, last_agent_error),
        "timings_ms": super::timings::of(events.as_deref().unwrap_or_default()),
        "studio": StudioLink::probe(dir.id()).to_json(),
    })
}

/// Each role's tokens and cost summed over its `agent.stop`s, with the total; `cost_source` says
/// whether a role's cost was reported by its CLI, estimated from the price table, or both
/// (`mixed`).
fn usage_json(events: &[crate::transcript::Event]) -> Value {
    use crate::adapters::Usage;
    let mut by_role: indexmap::IndexMap<String, (Usage, Option<&str>)> = indexmap::IndexMap::new();
    for event in events {
        let (crate::transcript::Kind::AgentStop, Some(metadata)) = (&event.kind, &event.metadata)
        else {
            continue;
        };
        let (usage, source) = by_role.entry(event.from.clone()).or_default();
        usage.absorb(&Usage::from_metadata(metadata));
        let this = event
            .data
            .as_ref()
            .and_then(|d| d.get("cost_source"))
            .and_then(Value::as_str)
            .map(|s| {
                if s == "estimated" {
                    "estimated"
                } else {
                    "reported"
                }
            });
        *source = match (*source, this) {
            (None, this) => this,
            (Some(was), Some(this)) if was != this => Some("mixed"),
            (was, _) => was,
        };
    }
    let mut total = Usage::default();
    let roles: serde_json::Map<String, Value> = by_role
        .into_iter()
        .map(|(role, (usage, source))| {
            total.absorb(&usage);
            let mut row = serde_json::to_value(&usage).unwrap_or(Value::Null);
            row["cost_source"] = json!(source);
            (role, row)
        })
        .collect();
    total.model = None;
    json!({ "by_role": roles, "total": total })
}

/// The last failed agent turn of a session that did not pass, in the CLI's words with the fix:
/// what a person reads first when a real agent could not do its work.
fn last_agent_error(events: &[crate::transcript::Event]) -> Value {
    let passed = events
        .iter()
        .rev()
        .find(|e| e.kind == crate::transcript::Kind::Done)
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d.get("outcome"))
        .is_some_and(|o| o == "pass");
    if passed {
        return Value::Null;
    }
    events
        .iter()
        .rev()
        .filter(|e| e.kind == crate::transcript::Kind::Error)
        .filter_map(|e| e.data.as_ref())
        .find(|d| d.get("class").is_some())
        .map_or(Value::Null, |d| {
            json!({
                "role": d.get("role"),
                "adapter": d.get("adapter"),
                "class": d.get("class"),
                "message": d.get("message"),
                "hint": d.get("hint"),
            })
        })
}
