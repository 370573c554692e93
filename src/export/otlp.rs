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
pub(crate) struct Request<S = Vec<OtlpSpan>> {
    resource_spans: [ResourceSpans<S>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans<S> {
    resource: Resource,
    scope_spans: [ScopeSpans<S>; 1],
}

#[derive(Serialize)]
struct Resource {
    attributes: Vec<KeyValue>,
}

#[derive(Serialize)]
struct ScopeSpans<S> {
    scope: Scope,
    spans: S,
}

#[derive(Serialize)]
struct Scope {
    name: &'static str,
    version: &'static str,
}

/// One span in the protobuf JSON mapping.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OtlpSpan {
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

/// `gen_ai.provider.name` as the semantic conventions spell the providers crumb knows; any other
/// name a binding gives is passed on as it is.
fn provider_name(provider: Option<&str>) -> &str {
    match provider {
        Some("google") => "gcp.gemini",
        Some(other) => other,
        None => "none",
    }
}

fn turn_attributes(span: &Span) -> Vec<KeyValue> {
    let mut attributes = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        text("gen_ai.agent.name", &span.track),
        text(
            "gen_ai.provider.name",
            provider_name(span.provider.as_deref()),
        ),
        text("crumb.event_id", &span.event_id),
        text("crumb.turn.status", &span.status),
    ];
    if let Some(model) = &span.requested_model {
        attributes.push(text("gen_ai.request.model", model));
    }
    if let Some(model) = &span.model {
        attributes.push(text("gen_ai.response.model", model));
    }
    if let Some(harness) = &span.harness {
        attributes.push(text("crumb.adapter", harness));
    }
    let usage = [
        ("gen_ai.usage.input_tokens", span.tokens_in),
        ("gen_ai.usage.output_tokens", span.tokens_out),
        ("gen_ai.usage.cache_read.input_tokens", span.cache_read),
        ("gen_ai.usage.cache_creation.input_tokens", span.cache_write),
        ("gen_ai.usage.reasoning.output_tokens", span.reasoning),
    ];
    for (key, tokens) in usage {
        if let Some(tokens) = tokens {
            attributes.push(int(key, tokens));
        }
    }
    if let Some(cost) = span.cost_usd {
        attributes.push(double("crumb.cost_usd", cost));
    }
    attributes
}

/// What the session span says about the session.
pub(crate) struct SessionSummary<'a> {
    pub id: &'a str,
    pub pipeline: &'a str,
    /// `pass`, `fail`, … (see [`super::outcome_of`]).
    pub outcome: &'a str,
    pub events: u64,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// The root span of a session's trace.
pub(crate) fn session_span(session: &SessionSummary<'_>) -> OtlpSpan {
    OtlpSpan {
        trace_id: trace_id(session.id),
        span_id: span_id(session.id),
        parent_span_id: None,
        name: format!("session {}", session.pipeline),
        kind: INTERNAL,
        start_time_unix_nano: nanos(session.start_ms),
        end_time_unix_nano: nanos(session.end_ms),
        attributes: vec![
            text("crumb.session.id", session.id),
            text("crumb.pipeline", session.pipeline),
            text("crumb.outcome", session.outcome),
            int("crumb.events", session.events),
        ],
        status: Some(status(session.outcome == "pass", session.outcome)),
    }
}

/// The OTLP spans of one interval of session `session`: the interval under the session span, and
/// a turn's tool calls under the turn.
pub(crate) fn spans_of(session: &str, span: &Span) -> Vec<OtlpSpan> {
    let trace = trace_id(session);
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
    let mut spans = Vec::with_capacity(1 + span.tools.len());
    spans.push(OtlpSpan {
        trace_id: trace.clone(),
        span_id: id.clone(),
        parent_span_id: Some(span_id(session)),
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
    spans
}

/// An export request of `spans` (a list of [`OtlpSpan`]s, or anything that serialises as one)
/// from service `service` (`service.name`).
pub(crate) fn request_of<S: Serialize>(service: &str, spans: S) -> Request<S> {
    Request {
        resource_spans: [ResourceSpans {
            resource: Resource {
                attributes: vec![
                    text("service.name", service),
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

/// The export request of a whole session, ready to serialise: its spans are made one at a time
/// while it is written ([`SessionSpans`]), never held together.
pub(crate) fn request(session: &Loaded) -> Request<SessionSpans<'_>> {
    let origin = session.origin_ms();
    let end = session.events.last_ms.unwrap_or(origin);
    let outcome = session.outcome();
    let root = session_span(&SessionSummary {
        id: &session.id,
        pipeline: &session.pipeline,
        outcome: &outcome,
        events: session.state.events,
        start_ms: origin,
        end_ms: end,
    });
    request_of("crumb", SessionSpans { session, root })
}

/// A session's OTLP spans as a JSON list: the session span, then each interval's.
pub(crate) struct SessionSpans<'a> {
    session: &'a Loaded,
    root: OtlpSpan,
}

impl Serialize for SessionSpans<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq as _;
        let mut list = serializer.serialize_seq(None)?;
        list.serialize_element(&self.root)?;
        for span in &self.session.spans {
            for otlp in spans_of(&self.session.id, span) {
                list.serialize_element(&otlp)?;
            }
        }
        list.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::spans::Span;

    fn keys(span: &OtlpSpan) -> Vec<(&str, String)> {
        span.attributes
            .iter()
            .map(|a| {
                let value = match &a.value {
                    AnyValue::Text(t) | AnyValue::Int(t) => t.clone(),
                    AnyValue::Double(d) => d.to_string(),
                };
                (a.key, value)
            })
            .collect()
    }

    #[test]
    fn a_turn_follows_the_current_genai_conventions() {
        let span = Span {
            kind: SpanKind::Turn,
            track: "builder".into(),
            name: "builder turn 1".into(),
            event_id: "wake".into(),
            start_ms: 1,
            end_ms: 2,
            status: "ok".into(),
            tokens_in: Some(10),
            tokens_out: Some(20),
            cache_read: Some(3),
            cache_write: Some(4),
            reasoning: Some(5),
            cost_usd: None,
            requested_model: Some("gemini-2.5-pro".into()),
            model: Some("gemini-2.5-pro-002".into()),
            provider: Some("google".into()),
            harness: Some("gemini-cli".into()),
            tools: Vec::new(),
        };
        let spans = spans_of("session", &span);
        let found = keys(&spans[0]);
        for (key, value) in [
            ("gen_ai.provider.name", "gcp.gemini"),
            ("gen_ai.request.model", "gemini-2.5-pro"),
            ("gen_ai.response.model", "gemini-2.5-pro-002"),
            ("gen_ai.usage.input_tokens", "10"),
            ("gen_ai.usage.output_tokens", "20"),
            ("gen_ai.usage.cache_read.input_tokens", "3"),
            ("gen_ai.usage.cache_creation.input_tokens", "4"),
            ("gen_ai.usage.reasoning.output_tokens", "5"),
        ] {
            assert!(
                found.contains(&(key, value.to_owned())),
                "{key}={value} in {found:?}"
            );
        }
        assert!(!found.iter().any(|(k, _)| *k == "gen_ai.system"));
        assert_eq!(
            spans[0].parent_span_id.as_deref(),
            Some(&*span_id("session"))
        );
    }
}
