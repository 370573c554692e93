//! Server-sent events: one stream per session (event ids are transcript ids, `Last-Event-ID`
//! resumes with exactly the missed events) and one stream of session-list changes.
//!
//! Each session stream keeps its own cursor (a sequence number into the line index) and reads the
//! lines itself when the hub signals growth, so delivery is in file order, gap-free and
//! duplicate-free whatever the timing of appends, reconnects and other clients.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use serde::Deserialize;
use tokio::sync::mpsc;

use super::api_error::ApiError;
use super::app::Shared;
use super::app::fresh_hub;
use super::index::{IndexedLine, batch_end};
use super::large_event;
use super::sessions;
use super::watched_session::WatchedSession;

/// Lines sent per read while catching up.
const BATCH: usize = 256;
/// How long a browser waits before reconnecting.
const RETRY: Duration = Duration::from_secs(2);

#[derive(Debug, Deserialize)]
pub(crate) struct StreamQuery {
    /// Resume after this event id (same meaning as `Last-Event-ID`, which wins when both are sent).
    pub after: Option<String>,
    /// `start` replays from the first event; the default starts at the current end.
    pub from: Option<String>,
}

type EventStream =
    Sse<KeepAliveStream<futures::stream::BoxStream<'static, Result<Event, Infallible>>>>;

fn channel_stream(rx: mpsc::Receiver<Event>, heartbeat: Duration) -> EventStream {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|event| (Ok(event), rx))
    });
    let boxed: futures::stream::BoxStream<'static, Result<Event, Infallible>> = Box::pin(stream);
    Sse::new(boxed).keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat"))
}

/// `GET /api/sessions/{id}/stream`.
pub(crate) async fn session_stream(
    State(app): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Result<EventStream, ApiError> {
    let hub = fresh_hub(&app, &id, false).await?;
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or(query.after);
    let mut progress = hub.subscribe();
    hub.ensure_polling(app.config.poll_interval);
    let start = {
        let inner = hub.lock();
        match resume {
            Some(id) => inner.index.position_after(id.trim()),
            None if query.from.as_deref() == Some("start") => Some(0),
            None => Some(inner.index.len()),
        }
    };
    let (tx, rx) = mpsc::channel::<Event>(64);
    let mut closing = app.closing.clone();
    tokio::spawn(async move {
        let hello = Event::default().retry(RETRY).comment("crumb studio");
        if tx.send(hello).await.is_err() {
            return;
        }
        let mut generation = progress.borrow_and_update().generation;
        let mut next = if let Some(seq) = start {
            seq
        } else {
            // The client's last id is not in this transcript: start it over.
            if tx
                .send(Event::default().event("reset").data("{}"))
                .await
                .is_err()
            {
                return;
            }
            0
        };
        loop {
            let (current, batch) = pending(&hub, next);
            if current != generation {
                generation = current;
                next = 0;
                if tx
                    .send(Event::default().event("reset").data("{}"))
                    .await
                    .is_err()
                {
                    return;
                }
                continue;
            }
            if !batch.is_empty() {
                let hub2 = Arc::clone(&hub);
                let lines = batch.clone();
                let texts = tokio::task::spawn_blocking(move || {
                    large_event::texts(&hub2.dir().transcript(), &lines)
                })
                .await;
                let Ok(Ok(texts)) = texts else {
                    return;
                };
                for ((line, _), text) in batch.iter().zip(texts) {
                    next += 1;
                    let Some(text) = text else { continue };
                    let event = Event::default().id(line.id()).event("append").data(text);
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
                continue;
            }
            tokio::select! {
                changed = progress.changed() => if changed.is_err() { return },
                _ = closing.wait_for(|c| *c) => return,
                () = tx.closed() => return,
            }
        }
    });
    Ok(channel_stream(rx, app.config.heartbeat))
}

/// The generation and the indexed lines from `next` on (at most [`BATCH`]), each with the
/// summary sent in its place when it is a large line.
fn pending(hub: &WatchedSession, next: usize) -> (u64, Vec<(IndexedLine, Option<String>)>) {
    let inner = hub.lock();
    let index = &inner.index;
    let lines = index
        .range(next..next.saturating_add(BATCH))
        .unwrap_or_default();
    let end = batch_end(&lines, 0, BATCH);
    let session = hub.dir().id();
    let batch = lines[..end]
        .iter()
        .enumerate()
        .map(|(i, line)| (*line, index.summary(next + i, line, session)))
        .collect();
    (inner.generation, batch)
}

/// `GET /api/stream`: `ready` once the current sessions are known, then a `session` event with a
/// fresh list row whenever a session appears or its status or size changes, and `removed` when
/// one disappears.
pub(crate) async fn sessions_stream(State(app): State<Shared>) -> EventStream {
    let (tx, rx) = mpsc::channel::<Event>(64);
    let mut closing = app.closing.clone();
    let interval = app.config.list_interval;
    let heartbeat = app.config.heartbeat;
    tokio::spawn(async move {
        if tx
            .send(Event::default().retry(RETRY).comment("crumb studio"))
            .await
            .is_err()
        {
            return;
        }
        let mut known: HashMap<String, String> = HashMap::new();
        let mut first = true;
        loop {
            let app2 = Arc::clone(&app);
            let Ok(rows) = tokio::task::spawn_blocking(move || {
                sessions::all(&app2.config.home)
                    .into_iter()
                    .map(|summary| {
                        let path = summary
                            .path
                            .join(crate::runtime::session_dir::TRANSCRIPT_FILE);
                        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                        let signature = format!("{}|{}|{size}", summary.status, summary.updated);
                        (summary, signature)
                    })
                    .collect::<Vec<_>>()
            })
            .await
            else {
                return;
            };
            let mut seen = HashMap::with_capacity(rows.len());
            for (summary, signature) in rows {
                let id = summary.id.clone();
                if !first && known.get(&id) != Some(&signature) {
                    // A row folds the session's appends: off the async threads.
                    let app3 = Arc::clone(&app);
                    let Ok(row) =
                        tokio::task::spawn_blocking(move || sessions::row(summary, &app3.registry))
                            .await
                    else {
                        return;
                    };
                    let Ok(event) = Event::default().event("session").json_data(&row) else {
                        continue;
                    };
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
                seen.insert(id, signature);
            }
            if !first {
                for gone in known.keys().filter(|id| !seen.contains_key(*id)) {
                    let event = Event::default().event("removed").data(gone);
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
            }
            if first {
                // Tells a client the baseline is taken: every change from now on is announced.
                let ready = Event::default().event("ready").data(seen.len().to_string());
                if tx.send(ready).await.is_err() {
                    return;
                }
            }
            known = seen;
            first = false;
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                _ = closing.wait_for(|c| *c) => return,
                () = tx.closed() => return,
            }
        }
    });
    channel_stream(rx, heartbeat)
}
