//! Where a run's time went (`timings_ms` in `crumb run --json`, the `time` line for people): from
//! the process start to the session's first event, each agent turn, each QA run (Chromium's start,
//! every check with its phases, every acceptance predicate, the shutdown), and from the last event
//! to the summary. Turns and QA come from the transcript (`agent.stop`'s `latency_ms`, `qa.result`'s
//! own figures), so a resumed session shows every turn it ever ran; `total_ms` is this process.

use std::sync::OnceLock;
use std::time::Instant;

use serde_json::{Value, json};

use crate::transcript::{Event, Kind};

/// When this process started (as near as `main` can tell).
static STARTED: OnceLock<(Instant, std::time::SystemTime)> = OnceLock::new();

/// Remember the process start; the first call wins.
pub(crate) fn mark_start() {
    let _ = STARTED.get_or_init(|| (Instant::now(), std::time::SystemTime::now()));
}

/// The breakdown of a session's `events` as seen by this process.
pub(crate) fn of(events: &[Event]) -> Value {
    let (started, started_wall) =
        *STARTED.get_or_init(|| (Instant::now(), std::time::SystemTime::now()));
    let epoch_ms = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    };
    let process_start = epoch_ms(started_wall);
    let now = epoch_ms(std::time::SystemTime::now());
    let ts = |e: &Event| {
        chrono::DateTime::parse_from_rfc3339(&e.ts)
            .ok()
            .map(|t| t.timestamp_millis())
    };
    // The first event this process wrote (a resumed session's older events are not its start).
    let first = events
        .iter()
        .filter_map(ts)
        .find(|&t| t >= process_start.saturating_sub(1));
    let last = events.iter().rev().find_map(ts);
    let turns: Vec<Value> = events
        .iter()
        .filter(|e| e.kind == Kind::AgentStop)
        .map(|e| {
            json!({
                "role": e.from,
                "ms": e.metadata.as_ref().and_then(|m| m.latency_ms),
            })
        })
        .collect();
    let qa: Vec<Value> = events
        .iter()
        .filter(|e| e.kind == Kind::QaResult)
        .filter_map(|e| e.data.as_ref())
        .map(qa_timings)
        .collect();
    json!({
        "total_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "start_ms": first.map(|t| (t - process_start).max(0)),
        "turns": turns,
        "qa": qa,
        "end_ms": last.filter(|&t| t >= process_start).map(|t| (now - t).max(0)),
    })
}

/// One QA run's figures, from its `qa.result` data.
fn qa_timings(data: &serde_json::Map<String, Value>) -> Value {
    let fixed = data.get("timings_ms");
    let field = |key: &str| {
        fixed
            .and_then(|t| t.get(key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let checks: Vec<Value> = data
        .get("checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let mut row = json!({ "id": c.get("id"), "ms": c.get("runtime_ms") });
            if let Some(phases) = c.get("details").and_then(|d| d.get("timings_ms")) {
                row["phases"] = phases.clone();
            }
            row
        })
        .collect();
    let acs: Vec<Value> = data
        .get("ac_results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| json!({ "id": a.get("ac_id"), "ms": a.get("runtime_ms") }))
        .collect();
    json!({
        "ms": data.get("runtime_ms"),
        "browser_start_ms": field("browser_start_ms"),
        "checks": checks,
        "acceptance": acs,
        "shutdown_ms": field("shutdown_ms"),
    })
}

/// The `time` line: the whole process, then where it went.
pub(crate) fn line(timings: &Value) -> Option<String> {
    let total = timings.get("total_ms")?.as_u64()?;
    let ms = |v: &Value| v.as_u64().unwrap_or(0);
    let turns: u64 = timings
        .get("turns")
        .and_then(Value::as_array)
        .map_or(0, |t| t.iter().map(|t| ms(&t["ms"])).sum());
    let count = timings
        .get("turns")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut parts = vec![format!(
        "{count} turn{} {turns} ms",
        if count == 1 { "" } else { "s" }
    )];
    for qa in timings
        .get("qa")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let browser = ms(&qa["browser_start_ms"]);
        let shutdown = ms(&qa["shutdown_ms"]);
        let mut checks: Vec<String> = Vec::new();
        for check in qa["checks"].as_array().into_iter().flatten() {
            let value = ms(&check["ms"]);
            if value > 0 {
                checks.push(format!("{} {value}", check["id"].as_str().unwrap_or("?")));
            }
        }
        let mut qa_parts = Vec::new();
        if browser > 0 {
            qa_parts.push(format!("browser start {browser}"));
        }
        qa_parts.extend(checks);
        if shutdown > 0 {
            qa_parts.push(format!("shutdown {shutdown}"));
        }
        let detail = if qa_parts.is_empty() {
            String::new()
        } else {
            format!(": {}", qa_parts.join(", "))
        };
        parts.push(format!("QA {} ms{detail}", ms(&qa["ms"])));
    }
    #[allow(clippy::cast_precision_loss, reason = "milliseconds of a run")]
    let seconds = total as f64 / 1000.0;
    Some(format!("{seconds:.2} s ({})", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_turns_and_every_qa_phase() {
        let timings = json!({
            "total_ms": 812,
            "turns": [{ "role": "a", "ms": 10 }, { "role": "b", "ms": 25 }],
            "qa": [{
                "ms": 600, "browser_start_ms": 300, "shutdown_ms": 40,
                "checks": [{ "id": "entry", "ms": 0 }, { "id": "boots", "ms": 200 }, { "id": "ac", "ms": 90 }],
            }],
        });
        assert_eq!(
            line(&timings).unwrap(),
            "0.81 s (2 turns 35 ms; QA 600 ms: browser start 300, boots 200, ac 90, shutdown 40)"
        );
        assert_eq!(line(&json!({})), None);
    }
}
