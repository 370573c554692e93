//! Where the time and tokens went: a session's spans (turns with their tool calls, QA runs, waits
//! for a person) and a per-role table of turns, tokens, cost and wall time. The spans are the ones
//! `crumb export --format chrome-trace` writes ([`crate::export::spans`]), so the two can never
//! disagree.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::app::Shared;
use crate::export::spans::SpanKind;

/// `GET /api/sessions/{id}/spans`.
pub(crate) async fn spans(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let dir = app.session_dir(&id)?;
    let value = tokio::task::spawn_blocking(move || {
        let loaded =
            crate::export::load(&dir).map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e))?;
        Ok::<Value, ApiError>(view(&loaded))
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(Json(value))
}

/// Per role: turns, tokens (in, out, cache read and write, reasoning), cost, wall time.
#[derive(Default)]
struct RoleRow {
    turns: u32,
    failed: u32,
    tokens_in: u64,
    tokens_out: u64,
    cache_read: u64,
    cache_write: u64,
    reasoning: u64,
    cost_usd: Option<f64>,
    wall_ms: i64,
}

fn view(loaded: &crate::export::Loaded) -> Value {
    let origin = loaded.origin_ms();
    let mut end = origin;
    let mut roles: BTreeMap<&str, RoleRow> = BTreeMap::new();
    let spans: Vec<Value> = loaded
        .spans
        .iter()
        .map(|span| {
            end = end.max(span.end_ms);
            let kind = match span.kind {
                SpanKind::Turn => "turn",
                SpanKind::Qa => "qa",
                SpanKind::Wait => "wait",
            };
            if span.kind == SpanKind::Turn {
                let row = roles.entry(span.track.as_str()).or_default();
                row.turns += 1;
                row.failed += u32::from(span.status != "ok");
                row.tokens_in += span.tokens_in.unwrap_or(0);
                row.tokens_out += span.tokens_out.unwrap_or(0);
                row.cache_read += span.cache_read.unwrap_or(0);
                row.cache_write += span.cache_write.unwrap_or(0);
                row.reasoning += span.reasoning.unwrap_or(0);
                if let Some(cost) = span.cost_usd {
                    *row.cost_usd.get_or_insert(0.0) += cost;
                }
                row.wall_ms += span.end_ms.saturating_sub(span.start_ms).max(0);
            }
            json!({
                "kind": kind,
                "track": span.track,
                "name": span.name,
                "event_id": span.event_id,
                "start_ms": span.start_ms - origin,
                "end_ms": span.end_ms - origin,
                "status": span.status,
                "tokens_in": span.tokens_in,
                "tokens_out": span.tokens_out,
                "cache_read": span.cache_read,
                "cache_write": span.cache_write,
                "reasoning": span.reasoning,
                "cost_usd": span.cost_usd,
                "model": span.model,
                "tools": span.tools.iter().map(|t| json!({
                    "name": t.name,
                    "start_ms": t.start_ms - origin,
                    "end_ms": t.end_ms - origin,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let roles: Vec<Value> = roles
        .into_iter()
        .map(|(role, row)| {
            json!({
                "role": role,
                "turns": row.turns,
                "failed": row.failed,
                "tokens_in": row.tokens_in,
                "tokens_out": row.tokens_out,
                "cache_read": row.cache_read,
                "cache_write": row.cache_write,
                "reasoning": row.reasoning,
                "cost_usd": row.cost_usd,
                "wall_ms": row.wall_ms,
            })
        })
        .collect();
    json!({ "duration_ms": end - origin, "spans": spans, "roles": roles })
}
