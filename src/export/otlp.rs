//! OTLP JSON (the protobuf-JSON mapping of `ExportTraceServiceRequest`) following the
//! OpenTelemetry `GenAI` semantic conventions: a session span, an `invoke_agent` span per turn with
//! `gen_ai.*` attributes and usage, an `execute_tool` span per tool call, QA and waits as
//! internal spans. Ids are derived from the session and event ids, so exports are reproducible.

use serde_json::{Value, json};

use super::Loaded;
use super::spans::{Span, SpanKind};

/// `SPAN_KIND_INTERNAL`.
const INTERNAL: u8 = 1;
const STATUS_OK: u8 = 1;
const STATUS_ERROR: u8 = 2;

fn trace_id(session: &str) -> String {
    crumb_core::digest::sha256_hex(session.as_bytes())[..32].to_owned()
}

fn span_id(seed: &str) -> String {
    crumb_core::digest::sha256_hex(seed.as_bytes())[..16].to_owned()
}

fn nanos(ms: i64) -> String {
    (i128::from(ms) * 1_000_000).max(0).to_string()
}

fn text(key: &str, value: &str) -> Value {
    json!({ "key": key, "value": { "stringValue": value } })
}

fn int(key: &str, value: u64) -> Value {
    // int64 is a string in the protobuf JSON mapping.
    json!({ "key": key, "value": { "intValue": value.to_string() } })
}

fn double(key: &str, value: f64) -> Value {
    json!({ "key": key, "value": { "doubleValue": value } })
}

fn status(span: &Span) -> Value {
    let ok = matches!(span.status.as_str(), "ok" | "pass" | "answered");
    if ok {
        json!({ "code": STATUS_OK })
    } else {
        json!({ "code": STATUS_ERROR, "message": span.status })
    }
}

fn turn_attributes(span: &Span) -> Vec<Value> {
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

/// The export request as a JSON value.
pub fn request(session: &Loaded) -> Value {
    let trace = trace_id(&session.id);
    let root = span_id(&session.id);
    let origin = session.origin_ms();
    let end = session
        .events
        .iter()
        .rev()
        .find_map(|e| super::spans::unix_ms(&e.ts))
        .unwrap_or(origin);
    let mut spans = vec![json!({
        "traceId": trace, "spanId": root, "name": format!("session {}", session.pipeline),
        "kind": INTERNAL, "startTimeUnixNano": nanos(origin), "endTimeUnixNano": nanos(end),
        "attributes": [
            text("crumb.session.id", &session.id), text("crumb.pipeline", &session.pipeline),
            text("crumb.outcome", &session.outcome()),
            int("crumb.events", session.state.events),
        ],
        "status": if session.outcome() == "pass" { json!({"code": STATUS_OK}) } else { json!({"code": STATUS_ERROR, "message": session.outcome()}) },
    })];
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
        spans.push(json!({
            "traceId": trace, "spanId": id, "parentSpanId": root, "name": name, "kind": INTERNAL,
            "startTimeUnixNano": nanos(span.start_ms), "endTimeUnixNano": nanos(span.end_ms),
            "attributes": attributes, "status": status(span),
        }));
        for tool in &span.tools {
            spans.push(json!({
                "traceId": trace, "spanId": span_id(&tool.event_id), "parentSpanId": id,
                "name": format!("execute_tool {}", tool.name), "kind": INTERNAL,
                "startTimeUnixNano": nanos(tool.start_ms), "endTimeUnixNano": nanos(tool.end_ms),
                "attributes": [
                    text("gen_ai.operation.name", "execute_tool"),
                    text("gen_ai.tool.name", &tool.name),
                    text("crumb.event_id", &tool.event_id),
                ],
            }));
        }
    }
    json!({
        "resourceSpans": [{
            "resource": { "attributes": [
                text("service.name", "crumb"),
                text("service.version", env!("CARGO_PKG_VERSION")),
            ] },
            "scopeSpans": [{
                "scope": { "name": "crumb", "version": env!("CARGO_PKG_VERSION") },
                "spans": spans,
            }],
        }],
    })
}
