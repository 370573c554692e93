//! The intervals of a session, read from its events: agent turns (`agent.wake` → `agent.stop`
//! of the same role, with the usage the adapter reported), tool calls inside a turn, QA runs
//! (the build → its `qa.result`) and waits for a person (`session.awaiting` → the next `user.*`).

use std::collections::HashMap;

use crate::transcript::{Event, Kind};

/// What an interval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanKind {
    Turn,
    Qa,
    Wait,
}

/// A tool call inside a turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub event_id: String,
    pub name: String,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// One interval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub kind: SpanKind,
    /// The role of a turn, `qa`, or `person`.
    pub track: String,
    pub name: String,
    /// The event that opened it.
    pub event_id: String,
    pub start_ms: i64,
    pub end_ms: i64,
    /// `ok`, `error`, `timeout` …, `pass`/`fail` for QA, `unfinished` when the transcript ends first.
    pub status: String,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// Prompt-cache reads and writes, and reasoning tokens, when the adapter reported them.
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    pub reasoning: Option<u64>,
    pub cost_usd: Option<f64>,
    /// The model the binding asked for (the `agent.wake`'s), if it named one.
    pub requested_model: Option<String>,
    /// The model the turn ran on: what the CLI reported on its `agent.stop`.
    pub model: Option<String>,
    pub provider: Option<String>,
    pub harness: Option<String>,
    pub tools: Vec<ToolCall>,
}

/// Unix milliseconds of an RFC 3339 timestamp.
pub(crate) fn unix_ms(ts: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.timestamp_millis())
}

fn data_str(event: &Event, key: &str) -> Option<String> {
    event
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

fn open(kind: SpanKind, track: &str, name: String, event: &Event, at: i64) -> Span {
    Span {
        kind,
        track: track.to_owned(),
        name,
        event_id: event.id.clone(),
        start_ms: at,
        end_ms: at,
        status: "unfinished".into(),
        tokens_in: None,
        tokens_out: None,
        cache_read: None,
        cache_write: None,
        reasoning: None,
        cost_usd: None,
        requested_model: None,
        model: None,
        provider: None,
        harness: None,
        tools: Vec::new(),
    }
}

/// The spans `builder` closed (`done`) and those still open (closed at the last event), ordered
/// by start.
pub(crate) fn ordered(mut done: Vec<Span>, builder: SpanBuilder) -> Vec<Span> {
    done.extend(builder.finish());
    done.sort_by(|a, b| {
        a.start_ms
            .cmp(&b.start_ms)
            .then(a.event_id.cmp(&b.event_id))
    });
    done
}

/// The spans of a transcript read one event at a time: [`SpanBuilder::push`] returns the spans
/// an event closes, so a live exporter sends each span as soon as it ends and a file export
/// collects the same spans from the same rules.
#[derive(Debug, Default)]
pub(crate) struct SpanBuilder {
    turns: HashMap<String, Span>,
    wait: Option<Span>,
    builds: HashMap<String, i64>,
    first: Option<i64>,
    last: i64,
}

impl SpanBuilder {
    /// The time of the first event with a readable timestamp (Unix milliseconds).
    pub(crate) fn first_ms(&self) -> Option<i64> {
        self.first
    }

    /// The latest event time seen so far (Unix milliseconds).
    pub(crate) fn last_ms(&self) -> i64 {
        self.last
    }

    /// Take in the next event; returns the spans it closed.
    pub(crate) fn push(&mut self, event: &Event) -> Vec<Span> {
        let mut done = Vec::new();
        let Some(at) = unix_ms(&event.ts) else {
            return done;
        };
        self.first.get_or_insert(at);
        self.last = self.last.max(at);
        match event.kind {
            Kind::AgentWake => {
                let role = data_str(event, "role").unwrap_or_else(|| event.from.clone());
                let name = event.body.clone().unwrap_or_else(|| format!("{role} turn"));
                let mut span = open(SpanKind::Turn, &role, name, event, at);
                span.harness = data_str(event, "adapter");
                span.requested_model = event.metadata.as_ref().and_then(|m| m.model.clone());
                span.provider = event.metadata.as_ref().and_then(|m| m.provider.clone());
                if let Some(old) = self.turns.insert(role, span) {
                    done.push(old);
                }
            }
            Kind::AgentStop => {
                if let Some(span) = self.turns.remove(&event.from) {
                    done.push(finish_turn(span, event, at));
                }
            }
            Kind::ToolCall => {
                if let Some(span) = self.turns.get_mut(&event.from) {
                    close_tools(span, at);
                    let name = data_str(event, "tool_kind")
                        .or_else(|| event.body.as_deref().map(|b| clip(b, 60)))
                        .unwrap_or_else(|| "tool".into());
                    span.tools.push(ToolCall {
                        event_id: event.id.clone(),
                        name,
                        start_ms: at,
                        end_ms: i64::MIN,
                    });
                }
            }
            Kind::ToolResult => {
                if let Some(span) = self.turns.get_mut(&event.from) {
                    close_tools(span, at);
                }
            }
            Kind::Build => {
                self.builds.insert(event.id.clone(), at);
            }
            Kind::QaResult => {
                let start = event
                    .parent_event_id
                    .as_deref()
                    .and_then(|p| self.builds.get(p).copied())
                    .unwrap_or(at);
                let mut span = open(SpanKind::Qa, "qa", "qa".into(), event, start);
                span.end_ms = at;
                span.status = data_str(event, "status").unwrap_or_else(|| "done".into());
                done.push(span);
            }
            Kind::SessionAwaiting => {
                let name = event
                    .body
                    .as_deref()
                    .map_or_else(|| "awaiting a person".into(), |b| clip(b, 80));
                self.wait = Some(open(SpanKind::Wait, "person", name, event, at));
            }
            _ if event.kind == Kind::Done || event.kind.as_str().starts_with("user.") => {
                if let Some(mut span) = self.wait.take() {
                    span.end_ms = at;
                    span.status = "answered".into();
                    done.push(span);
                }
            }
            _ => {}
        }
        done
    }

    /// The spans still open, closed at the last event (`unfinished`).
    pub(crate) fn finish(self) -> Vec<Span> {
        let last = self.last;
        self.turns
            .into_values()
            .chain(self.wait)
            .map(|mut span| {
                span.end_ms = last;
                close_tools(&mut span, last);
                span
            })
            .collect()
    }
}

/// A turn closed by its `agent.stop`, with the usage the adapter reported.
fn finish_turn(mut span: Span, event: &Event, at: i64) -> Span {
    span.end_ms = at;
    span.status = data_str(event, "outcome").unwrap_or_else(|| "ok".into());
    if let Some(m) = &event.metadata {
        span.tokens_in = m.tokens_in;
        span.tokens_out = m.tokens_out;
        span.cache_read = m.cache_read;
        span.cache_write = m.cache_write;
        span.reasoning = m.thinking_tokens;
        span.cost_usd = m.cost_usd;
        span.model.clone_from(&m.model);
        if m.provider.is_some() {
            span.provider.clone_from(&m.provider);
        }
        span.harness = m.harness.clone().or(span.harness);
    }
    close_tools(&mut span, at);
    span
}

/// End the open tool call of a turn at `at`.
fn close_tools(span: &mut Span, at: i64) {
    if let Some(tool) = span.tools.last_mut()
        && tool.end_ms == i64::MIN
    {
        tool.end_ms = at;
    }
}

pub(crate) fn clip(text: &str, n: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    if first.chars().count() > n {
        format!("{}…", first.chars().take(n).collect::<String>())
    } else {
        first.to_owned()
    }
}
