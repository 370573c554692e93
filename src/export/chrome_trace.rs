//! The Chrome trace-event format (loads in Perfetto and `chrome://tracing`): one track (thread)
//! per role plus `qa` and `person`, a complete event (`ph: X`) per span, an instant (`ph: i`) per
//! verdict and ending, times in microseconds from the session's first event.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Loaded;
use super::spans::SpanKind;
use crate::transcript::Kind;

const PID: u32 = 1;

fn micros(ms: i64, origin: i64) -> i64 {
    (ms - origin).saturating_mul(1000)
}

/// The trace as a JSON value (`{"traceEvents": [...]}`).
pub fn trace(session: &Loaded) -> Value {
    let origin = session.origin_ms();
    let mut tids: BTreeMap<&str, u32> = BTreeMap::new();
    for span in &session.spans {
        let next = u32::try_from(tids.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        tids.entry(span.track.as_str()).or_insert(next);
    }
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": PID, "tid": 0,
        "args": { "name": format!("crumb {} · {}", session.pipeline, session.id) },
    })];
    for (track, tid) in &tids {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": { "name": track },
        }));
    }
    for span in &session.spans {
        let tid = tids.get(span.track.as_str()).copied().unwrap_or(0);
        let category = match span.kind {
            SpanKind::Turn => "turn",
            SpanKind::Qa => "qa",
            SpanKind::Wait => "wait",
        };
        events.push(json!({
            "name": span.name, "cat": category, "ph": "X", "pid": PID, "tid": tid,
            "ts": micros(span.start_ms, origin),
            "dur": micros(span.end_ms, span.start_ms).max(0),
            "args": {
                "event_id": span.event_id, "status": span.status,
                "tokens_in": span.tokens_in, "tokens_out": span.tokens_out,
                "model": span.model, "cost_usd": span.cost_usd,
            },
        }));
        for tool in &span.tools {
            events.push(json!({
                "name": tool.name, "cat": "tool", "ph": "X", "pid": PID, "tid": tid,
                "ts": micros(tool.start_ms, origin),
                "dur": micros(tool.end_ms, tool.start_ms).max(0),
                "args": { "event_id": tool.event_id },
            }));
        }
    }
    for event in &session.events {
        if matches!(event.kind, Kind::JudgeScore | Kind::Done | Kind::Audit)
            && let Some(at) = super::spans::unix_ms(&event.ts)
        {
            events.push(json!({
                "name": format!("{} {}", event.from, event.kind),
                "cat": "event", "ph": "i", "s": "g", "pid": PID, "tid": 0,
                "ts": micros(at, origin),
                "args": { "event_id": event.id, "body": event.body },
            }));
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}
