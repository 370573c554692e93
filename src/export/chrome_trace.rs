//! The Chrome trace-event format (loads in Perfetto and `chrome://tracing`): one track (thread)
//! per role plus `qa` and `person`, a complete event (`ph: X`) per span, an instant (`ph: i`) per
//! verdict and ending, times in microseconds from the session's first event.
//!
//! Written through typed structs straight to the output: a long session has an event per tool
//! call, and a JSON tree per event cost most of the time budget.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Loaded;
use super::spans::SpanKind;
use crate::transcript::Kind;

const PID: u32 = 1;

/// `{"traceEvents": [...], "displayTimeUnit": "ms"}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Trace<'a> {
    trace_events: TraceEvents<'a>,
    display_time_unit: &'static str,
}

/// The trace's events as a JSON list, made one at a time while it is written.
pub(crate) struct TraceEvents<'a> {
    session: &'a Loaded,
}

impl Serialize for TraceEvents<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq as _;
        let mut list = serializer.serialize_seq(None)?;
        each_event(self.session, |event| list.serialize_element(&event))?;
        list.end()
    }
}

#[derive(Serialize)]
struct TraceEvent<'a> {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    ph: &'static str,
    /// The scope of an instant event (`g`: global).
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<i64>,
    args: Args<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: String,
    },
    Span {
        event_id: &'a str,
        status: &'a str,
        tokens_in: Option<u64>,
        tokens_out: Option<u64>,
        model: Option<&'a str>,
        cost_usd: Option<f64>,
    },
    Event {
        event_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        body: Option<&'a str>,
    },
}

fn micros(ms: i64, origin: i64) -> i64 {
    (ms - origin).saturating_mul(1000)
}

fn metadata(name: &str, tid: u32, value: String) -> TraceEvent<'static> {
    TraceEvent {
        name: name.to_owned(),
        cat: None,
        ph: "M",
        s: None,
        pid: PID,
        tid,
        ts: None,
        dur: None,
        args: Args::Name { name: value },
    }
}

/// The trace, ready to serialise (its events are made while it is written).
pub(crate) fn trace(session: &Loaded) -> Trace<'_> {
    Trace {
        trace_events: TraceEvents { session },
        display_time_unit: "ms",
    }
}

/// Each event of the trace, in order, to `emit` (which may refuse: then that is the result).
fn each_event<'a, E>(
    session: &'a Loaded,
    mut emit: impl FnMut(TraceEvent<'a>) -> Result<(), E>,
) -> Result<(), E> {
    let origin = session.origin_ms();
    let mut tids: BTreeMap<&str, u32> = BTreeMap::new();
    for span in &session.spans {
        let next = u32::try_from(tids.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        tids.entry(span.track.as_str()).or_insert(next);
    }
    emit(metadata(
        "process_name",
        0,
        format!("crumb {} · {}", session.pipeline, session.id),
    ))?;
    for (track, tid) in &tids {
        emit(metadata("thread_name", *tid, (*track).to_owned()))?;
    }
    for span in &session.spans {
        let tid = tids.get(span.track.as_str()).copied().unwrap_or(0);
        let category = match span.kind {
            SpanKind::Turn => "turn",
            SpanKind::Qa => "qa",
            SpanKind::Wait => "wait",
        };
        emit(TraceEvent {
            name: span.name.clone(),
            cat: Some(category),
            ph: "X",
            s: None,
            pid: PID,
            tid,
            ts: Some(micros(span.start_ms, origin)),
            dur: Some(micros(span.end_ms, span.start_ms).max(0)),
            args: Args::Span {
                event_id: &span.event_id,
                status: &span.status,
                tokens_in: span.tokens_in,
                tokens_out: span.tokens_out,
                model: span.model.as_deref(),
                cost_usd: span.cost_usd,
            },
        })?;
        for tool in &span.tools {
            emit(TraceEvent {
                name: tool.name.clone(),
                cat: Some("tool"),
                ph: "X",
                s: None,
                pid: PID,
                tid,
                ts: Some(micros(tool.start_ms, origin)),
                dur: Some(micros(tool.end_ms, tool.start_ms).max(0)),
                args: Args::Event {
                    event_id: &tool.event_id,
                    body: None,
                },
            })?;
        }
    }
    for event in &session.events.marks {
        if matches!(event.kind, Kind::JudgeScore | Kind::Done | Kind::Audit)
            && let Some(at) = super::spans::unix_ms(&event.ts)
        {
            emit(TraceEvent {
                name: format!("{} {}", event.from, event.kind),
                cat: Some("event"),
                ph: "i",
                s: Some("g"),
                pid: PID,
                tid: 0,
                ts: Some(micros(at, origin)),
                dur: None,
                args: Args::Event {
                    event_id: &event.id,
                    body: event.body.as_deref(),
                },
            })?;
        }
    }
    Ok(())
}
