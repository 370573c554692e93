//! `/ask` answers: short, deterministic descriptions of the session computed from the state
//! *before* the question and the question's own timestamp (never the machine's clock).

use std::fmt::Write as _;

use super::state::State;
use crate::pipeline::table::TransitionTable;
use crate::transcript::{Event, Kind};

/// The topics `/ask` understands.
pub(crate) const TOPICS: [&str; 5] = ["status", "cost", "next", "stuck", "scorecard"];

/// The answer to a `user.intervene` carrying `data.ask`, if it asks a known topic.
pub(super) fn pending_answer(
    table: &TransitionTable,
    state: &State,
    event: &Event,
    now_ms: Option<i64>,
) -> Option<String> {
    if event.kind != Kind::UserIntervene {
        return None;
    }
    let topic = crate::transcript::payload::data_str(event, "ask")?;
    answer(table, state, topic.trim(), now_ms)
}

/// Answer `topic` about `state`; `now_ms` is the asking event's time.
pub fn answer(
    table: &TransitionTable,
    state: &State,
    topic: &str,
    now_ms: Option<i64>,
) -> Option<String> {
    let text = match topic {
        "status" => {
            let age = match (state.clock.started_ms, now_ms) {
                (Some(start), Some(now)) => u64::try_from(now.saturating_sub(start)).unwrap_or(0),
                _ => 0,
            };
            let mut text = format!("session {}", duration(age));
            if let Some(done) = &state.done {
                let _ = write!(text, " [DONE: {}]", done.reason);
            }
            match &state.last_event {
                Some(last) => {
                    let _ = write!(text, " | last={}/{}", last.from, last.kind);
                }
                None => text.push_str(" | last=(none)"),
            }
            let _ = write!(
                text,
                " | next={}",
                state.next_role.as_deref().unwrap_or("(idle)")
            );
            if state.paused {
                text.push_str(" | paused");
            }
            if let Some(awaiting) = &state.awaiting {
                let _ = write!(
                    text,
                    " | awaiting a person (verdict {})",
                    awaiting.judge_event_id
                );
            }
            text
        }
        "cost" => format!(
            "tokens cum={} | warn={} hard={}",
            compact(state.budgets.tokens),
            compact(table.limits.tokens_warn),
            compact(table.limits.tokens_hard)
        ),
        "next" => match (&state.next_role, &state.last_event) {
            (None, _) => "next: idle (no spawn queued)".to_owned(),
            (Some(role), Some(last)) => {
                format!("next: {role} | triggered by {}/{}", last.from, last.kind)
            }
            (Some(role), None) => format!("next: {role}"),
        },
        "stuck" => {
            let open: Vec<String> = state
                .roles
                .iter()
                .filter(|(_, r)| r.failures_in_a_row > 0)
                .map(|(id, r)| {
                    format!(
                        "{id}={}/{}",
                        r.failures_in_a_row, table.limits.circuit_open_after
                    )
                })
                .collect();
            format!(
                "stuck={}/{} | breakers: {}",
                state.budgets.errors_in_a_row,
                table.limits.stuck_after_errors,
                if open.is_empty() {
                    "(all closed)".to_owned()
                } else {
                    open.join(", ")
                }
            )
        }
        "scorecard" => match &state.verification.latest {
            None => "no judge.score yet".to_owned(),
            Some(v) => format!(
                "latest: aggregate={} verdict={} (claimed {} {}) | verifications={}",
                v.corrected.aggregate,
                v.corrected.verdict,
                v.raw
                    .aggregate
                    .map_or_else(|| "-".to_owned(), |a| a.to_string()),
                v.raw
                    .verdict
                    .map_or_else(|| "-".to_owned(), |v| v.to_string()),
                state.verification.count
            ),
        },
        _ => return None,
    };
    Some(text)
}

/// `850ms`, `12s`, `3m`, `3m5s`, `2h`, `2h7m`.
pub fn duration(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = ms / 1000;
    if secs < 60 {
        return format!("{secs}s");
    }
    let (mins, rest) = (secs / 60, secs % 60);
    if mins < 60 {
        return if rest == 0 {
            format!("{mins}m")
        } else {
            format!("{mins}m{rest}s")
        };
    }
    let (hours, mins) = (mins / 60, mins % 60);
    if mins == 0 {
        format!("{hours}h")
    } else {
        format!("{hours}h{mins}m")
    }
}

/// `999`, `1.2k`, `3.40m`.
fn compact(n: u64) -> String {
    #[allow(clippy::cast_precision_loss, reason = "display only")]
    let f = n as f64;
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", f / 1000.0)
    } else {
        format!("{:.2}m", f / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_000), "12s");
        assert_eq!(duration(180_000), "3m");
        assert_eq!(duration(185_000), "3m5s");
        assert_eq!(duration(7_200_000), "2h");
        assert_eq!(duration(7_620_000), "2h7m");
    }

    #[test]
    fn token_counts_are_compact() {
        assert_eq!(compact(999), "999");
        assert_eq!(compact(1234), "1.2k");
        assert_eq!(compact(3_400_000), "3.40m");
    }
}
