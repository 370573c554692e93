//! The batches of the home, read-only: `GET /api/batches` (JSON) and `GET /batches` (a small
//! server-rendered page, no script). Each batch's rows are built from its pitch records and
//! session folders exactly as `crumb batch` prints them.

use std::fmt::Write as _;

use axum::Json;
use axum::extract::State;
use axum::response::Html;
use serde_json::{Value, json};

use super::app::Shared;
use crate::batch::record::BatchDir;
use crate::batch::run::session_path;
use crate::batch::summary::Row;
use crate::export::html::escape;

/// Every batch recorded under `home`: `(id, pipeline, rows)`.
fn batches(home: &std::path::Path) -> Vec<(String, String, Vec<Row>)> {
    let mut folders: Vec<_> = std::fs::read_dir(home.join("batches"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    folders.sort();
    folders
        .into_iter()
        .filter_map(|folder| BatchDir::open(folder).ok())
        .map(|(dir, batch)| {
            let rows = batch
                .pitches
                .iter()
                .enumerate()
                .map(
                    |(i, pitch)| match dir.pitch(i).session.and_then(|s| session_path(home, &s)) {
                        Some(path) => Row::of_session(i, &pitch.pitch, &path),
                        None => Row::not_run(i, &pitch.pitch, "not started"),
                    },
                )
                .collect();
            (batch.id, batch.pipeline.display().to_string(), rows)
        })
        .collect()
}

pub(crate) async fn list(State(app): State<Shared>) -> Json<Value> {
    let home = app.config.home.root().to_path_buf();
    let found = tokio::task::spawn_blocking(move || batches(&home))
        .await
        .unwrap_or_default();
    Json(Value::Array(
        found
            .into_iter()
            .map(|(id, pipeline, rows)| json!({ "id": id, "pipeline": pipeline, "rows": rows }))
            .collect(),
    ))
}

pub(crate) async fn page(State(app): State<Shared>) -> Html<String> {
    let home = app.config.home.root().to_path_buf();
    let found = tokio::task::spawn_blocking(move || batches(&home))
        .await
        .unwrap_or_default();
    let mut out = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>crumb batches</title></head><body><h1>Batches</h1>",
    );
    if found.is_empty() {
        out.push_str("<p>No batch in this home (<code>crumb batch</code> records them).</p>");
    }
    for (id, pipeline, rows) in found {
        let passed = rows.iter().filter(|r| r.passed()).count();
        let _ = write!(
            out,
            "<h2>{} · {}</h2><p>{passed}/{} passed</p><table border=\"1\"><tr><th>#</th><th>pitch</th><th>outcome</th><th>score</th><th>turns</th><th>tokens</th><th>session</th></tr>",
            escape(&id),
            escape(&pipeline),
            rows.len()
        );
        for row in rows {
            let session = row.session.as_deref().map_or_else(String::new, |s| {
                format!("<a href=\"/#/session/{0}\">{0}</a>", escape(s))
            });
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{session}</td></tr>",
                row.index,
                escape(&row.pitch),
                escape(&row.outcome),
                row.score.map_or_else(|| "-".into(), |s| format!("{s:.1}")),
                row.turns,
                row.tokens,
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</body></html>");
    Html(out)
}
