//! OTLP JSON (the protobuf-JSON mapping of `ExportTraceServiceRequest`) following the
//! OpenTelemetry `GenAI` semantic conventions: a session span, an `invoke_agent` span per turn with
//! `gen_ai.*` attributes and usage, an `execute_tool` span per tool call, QA and waits as
//! internal spans. Ids are derived from the session and event ids, so exports are reproducible.
//!
//! Written through typed structs straight to the output: a long session has a span per tool call
//! (about 100,000 in a 100k-event session), and a JSON tree per span cost twice the time budget.

use serde::Serialize;

use super::Loaded;
use super::spans::{Span, SpanKind};

/// `SPAN_KIND_INTERNAL`.
const INTERNAL: u8 = 1;
const STATUS_OK: u8 = 1;
const STATUS_ERROR: u8 = 2;

/// `ExportTraceServiceRequest`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Request {
    resource_spans: [ResourceSpans; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    resource: Resource,
    scope_spans: [ScopeSpans; 1],
}

#[derive(Serialize)]
struct Resource {
    attributes: Vec<KeyValue>,
}

#[derive(Serialize)]
struct ScopeSpans {
    scope: Scope,
    spans: Vec<OtlpSpan>,
}

#[derive(Serialize)]
struct Scope {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OtlpSpan {
    trace_id: String,
    span_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_span_id: Option<String>,
    name: String,
    kind: u8,
    start_time_unix_nano: String,
    end_time_unix_nano: String,
    attributes: Vec<KeyValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
}

#[derive(Serialize)]
struct Status {
    code: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

#[derive(Serialize)]
struct KeyValue {
    key: &'static str,
    value: AnyValue,
}

/// `AnyValue`: one of its fields, as the protobuf JSON mapping writes a `oneof`.
#[derive(Serialize)]
enum AnyValue {
    #[serde(rename = "stringValue")]
    Text(String),
    /// int64 is a string in the protobuf JSON mapping.
    #[serde(rename = "intValue")]
    Int(String),
    #[serde(rename = "doubleValue")]
    Double(f64),
}

fn trace_id(session: &str) -> String {
    crumb_core::digest::sha256_hex(session.as_bytes())[..32].to_owned()
}

fn span_id(seed: &str) -> String {
    crumb_core::digest::sha256_hex(seed.as_bytes())[..16].to_owned()
}

fn nanos(ms: i64) -> String {
    (i128::from(ms) * 1_000_000).max(0).to_string()
}

fn text(key: &'static str, value: &str) -> KeyValue {
    KeyValue {
        key,
        value: AnyValue::Text(value.to_owned()),
    }
}

fn int(key: &'static str, value: u64) -> KeyValue {
    KeyValue {
        key,
        value: AnyValue::Int(value.to_string()),
    }
}

fn double(key: &'static str, value: f64) -> KeyValue {
    KeyValue {
        key,
        value: AnyValue::Double(value),
    }
}

fn status(ok: bool, message: &str) -> Status {
    if ok {
        Status {
            code: STATUS_OK,
            message: None,
        }
    } else {
        Status {
            code: STATUS_ERROR,
            message: Some(message.to_owned()),
        }
    }
}

fn span_status(span: &Span) -> Status {
    let ok = matches!(span.status.as_str(), "ok" | "pass" | "answered");
    status(ok, &span.status)
}

fn turn_attributes(span: &Span) -> Vec<KeyValue> {
    let mut attributes = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        text("gen_ai.agent.name", &span.track),
        text("gen_ai.system", span.provider.as_deref().unwrap_or("none")),
        text("crumb.event_id", &span.event_id),
        text("crumb.turn.status", &span.status),
    ];
    if let Some(model) = &span.model {
        attributes.push(text("gen_ai.request.model", model));
        attributes.push(text("gen_ai.response.model", model));
    }
    if let Some(harness) = &span.harness {
        attributes.push(text("crumb.adapter", harness));
    }
    if let Some(tokens) = span.tokens_in {
        attributes.push(int("gen_ai.usage.input_tokens", tokens));
    }
    if let Some(tokens) = span.tokens_out {
        attributes.push(int("gen_ai.usage.output_tokens", tokens));
    }
    if let Some(cost) = span.cost_usd {
        attributes.push(double("crumb.cost_usd", cost));
    }
    attributes
}

/// The export request, ready to serialise.
pub(crate) fn request(session: &Loaded) -> Request {
    let trace = trace_id(&session.id);
    let root = span_id(&session.id);
    let origin = session.origin_ms();
    let end = session
        .events
        .iter()
        .rev()
        .find_map(|e| super::spans::unix_ms(&e.ts))
        .unwrap_or(origin);
    let outcome = session.outcome();
    let mut spans = vec![OtlpSpan {
        trace_id: trace.clone(),
        span_id: root.clone(),
        parent_span_id: None,
        name: format!("session {}", session.pipeline),
        kind: INTERNAL,
        start_time_unix_nano: nanos(origin),
        end_time_unix_nano: nanos(end),
        attributes: vec![
            text("crumb.session.id", &session.id),
            text("crumb.pipeline", &session.pipeline),
            text("crumb.outcome", &outcome),
            int("crumb.events", session.state.events),
        ],
        status: Some(status(outcome == "pass", &outcome)),
    }];
    for span in &session.spans {
        let id = span_id(&span.event_id);
        let (name, attributes) = match span.kind {
            SpanKind::Turn => (
                format!("invoke_agent {}", span.track),
                turn_attributes(span),
            ),
            SpanKind::Qa => (
                "qa".to_owned(),
                vec![text("crumb.event_id", &span.event_id)],
            ),
            SpanKind::Wait => (
                "await person".to_owned(),
                vec![text("crumb.event_id", &span.event_id)],
            ),
        };
        spans.push(OtlpSpan {
            trace_id: trace.clone(),
            span_id: id.clone(),
            parent_span_id: Some(root.clone()),
            name,
            kind: INTERNAL,
            start_time_unix_nano: nanos(span.start_ms),
            end_time_unix_nano: nanos(span.end_ms),
            attributes,
            status: Some(span_status(span)),
        });
        for tool in &span.tools {
            spans.push(OtlpSpan {
                trace_id: trace.clone(),
                span_id: span_id(&tool.event_id),
                parent_span_id: Some(id.clone()),
                name: format!("execute_tool {}", tool.name),
                kind: INTERNAL,
                start_time_unix_nano: nanos(tool.start_ms),
                end_time_unix_nano: nanos(tool.end_ms),
                attributes: vec![
                    text("gen_ai.operation.name", "execute_tool"),
                    text("gen_ai.tool.name", &tool.name),
                    text("crumb.event_id", &tool.event_id),
                ],
                status: None,
            });
        }
    }
    Request {
        resource_spans: [ResourceSpans {
            resource: Resource {
                attributes: vec![
                    text("service.name", "crumb"),
                    text("service.version", env!("CARGO_PKG_VERSION")),
                ],
            },
            scope_spans: [ScopeSpans {
                scope: Scope {
                    name: "crumb",
                    version: env!("CARGO_PKG_VERSION"),
                },
                spans,
            }],
        }],
    }
}
