//! The conversation with a session, rebuilt from its files so it survives a reload and shows
//! lines sent from the CLI (`crumb say`) as well as from the page: each inbox line a person wrote,
//! the `user.*` event it became, the engine's `ack` and an `/ask` answer in full — and the lines
//! still waiting for a coordinator, so the page can say an approve or veto is queued.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::app::{Shared, fresh_hub};
use super::index::{IndexedLine, read_lines};
use super::watched_session::WatchedSession;
use crate::runtime::inbox::{InboxLine, read_after};
use crate::transcript::{Event, Kind};

/// The newest lines kept in the thread: a long conversation is clipped at its start.
const THREAD_LINES: usize = 200;

/// One line a person wrote, and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ThreadLine {
    /// The line as written.
    pub line: String,
    /// Byte offset just past the line in `inbox.txt` (the page matches live acks by it).
    pub inbox_offset: u64,
    /// The `user.*` event the coordinator made of it (absent while it waits, or when refused).
    pub event: Option<String>,
    pub ts: Option<String>,
    /// The engine's answer: `ok` and its words.
    pub ack: Option<Ack>,
    /// An `/ask` answer, whole.
    pub answer: Option<String>,
    /// The role a targeted line (`@role …`) went to, and how many events it wrote since.
    pub responded: Option<Responded>,
    /// No coordinator has read it yet.
    pub pending: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Ack {
    pub ok: bool,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Responded {
    pub role: String,
    pub events: usize,
}

/// `GET /api/sessions/{id}/thread`.
pub(crate) async fn thread(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let hub = fresh_hub(&app, &id, false).await?;
    let lines = tokio::task::spawn_blocking(move || build(&hub))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(Json(json!({ "lines": lines })))
}

/// The thread of `hub`'s session.
pub(crate) fn build(hub: &WatchedSession) -> Result<Vec<ThreadLine>, ApiError> {
    let internal = |e: &dyn std::fmt::Display| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the thread: {e}"),
        )
    };
    let inbox = read_after(&hub.dir().inbox(), 0).map_err(|e| internal(&e))?;
    let events = conversation_events(hub).map_err(|e| internal(&e))?;
    let mut thread = assemble(&inbox, &events);
    count_responses(hub, &mut thread);
    Ok(thread)
}

/// For each line sent to one role, how many events that role wrote after it.
fn count_responses(hub: &WatchedSession, thread: &mut [ThreadLine]) {
    let inner = hub.lock();
    let index = &inner.index;
    for line in thread.iter_mut() {
        let (Some(responded), Some(event)) = (line.responded.as_mut(), line.event.as_deref())
        else {
            continue;
        };
        let (Some(role), Some(after)) = (index.name_id(&responded.role), index.position(event))
        else {
            continue;
        };
        responded.events = index
            .scan(after, true)
            .filter(|(_, l)| l.from == role)
            .count();
    }
}

/// The events a thread is made of: a person's, the acks and notes (answers), and every event's
/// sender (to count a targeted role's response), read through the index.
fn conversation_events(hub: &WatchedSession) -> std::io::Result<Vec<Event>> {
    let inner = hub.lock();
    let index = &inner.index;
    let wanted: Vec<u16> = ["user", "system"]
        .iter()
        .filter_map(|name| index.name_id(name))
        .collect();
    let lines: Vec<IndexedLine> = index
        .scan(0, true)
        .map(|(_, line)| line)
        .filter(|line| wanted.contains(&line.from))
        .collect();
    drop(inner);
    let texts = read_lines(&hub.dir().transcript(), &lines)?;
    Ok(texts
        .into_iter()
        .flatten()
        .filter_map(|text| serde_json::from_str::<Event>(&text).ok())
        .filter(|e| e.from == "user" || matches!(e.kind, Kind::Ack | Kind::Note))
        .collect())
}

/// Pair each inbox line with its event, ack and answer.
fn assemble(inbox: &[InboxLine], events: &[Event]) -> Vec<ThreadLine> {
    let offset_of = |e: &Event| {
        e.data
            .as_ref()
            .and_then(|d| d.get("inbox_offset"))
            .and_then(Value::as_u64)
    };
    let consumed = events.iter().filter_map(offset_of).max().unwrap_or(0);
    let start = inbox.len().saturating_sub(THREAD_LINES);
    inbox[start..]
        .iter()
        .filter(|line| !line.too_long && !line.text.trim().is_empty())
        .map(|line| {
            let user = events
                .iter()
                .find(|e| e.from == "user" && offset_of(e) == Some(line.end));
            // A refused line is answered by a `system` ack carrying its offset, not a user event.
            let refusal = events.iter().find(|e| {
                e.kind == Kind::Ack && e.from == "system" && offset_of(e) == Some(line.end)
            });
            let ack = user
                .and_then(|u| {
                    events.iter().find(|e| {
                        e.kind == Kind::Ack
                            && e.metadata.as_ref().and_then(|m| m.ack_for.as_deref())
                                == Some(u.id.as_str())
                    })
                })
                .or(refusal)
                .map(|e| Ack {
                    ok: e
                        .data
                        .as_ref()
                        .and_then(|d| d.get("ok"))
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                    text: e.body.clone().unwrap_or_default(),
                });
            let answer = user.and_then(|u| {
                events
                    .iter()
                    .find(|e| {
                        e.kind == Kind::Note
                            && e.metadata.as_ref().and_then(|m| m.in_reply_to.as_deref())
                                == Some(u.id.as_str())
                    })
                    .and_then(|e| e.body.clone())
            });
            ThreadLine {
                line: line.text.trim().to_owned(),
                inbox_offset: line.end,
                event: user.map(|u| u.id.clone()),
                ts: user.map(|u| u.ts.clone()),
                ack,
                answer,
                responded: user
                    .and_then(|u| u.to.clone())
                    .map(|role| Responded { role, events: 0 }),
                pending: line.end > consumed,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: &str) -> Event {
        serde_json::from_str(json).unwrap()
    }

    fn line(text: &str, start: u64) -> InboxLine {
        InboxLine {
            text: text.to_owned(),
            start,
            end: start + text.len() as u64 + 1,
            too_long: false,
        }
    }

    const BASE: &str = r#""ts":"2026-12-02T10:00:00Z","session_id":"01JS0000000000000000000000""#;

    #[test]
    fn a_line_is_paired_with_its_event_ack_and_answer_and_later_lines_wait() {
        let ask = line("/ask status", 0);
        let approve = line("/approve", ask.end);
        let events = [
            event(&format!(
                r#"{{"id":"01JS0000000000000000000001",{BASE},"from":"user","kind":"user.intervene","body":"/ask status","data":{{"ask":"status","inbox_offset":{}}}}}"#,
                ask.end
            )),
            event(&format!(
                r#"{{"id":"01JS0000000000000000000002",{BASE},"from":"system","kind":"note","body":"session 3 s, round 1","metadata":{{"in_reply_to":"01JS0000000000000000000001"}}}}"#
            )),
            event(&format!(
                r#"{{"id":"01JS0000000000000000000003",{BASE},"from":"system","kind":"ack","body":"answered","data":{{"ok":true}},"metadata":{{"ack_for":"01JS0000000000000000000001"}}}}"#
            )),
        ];
        let thread = assemble(&[ask, approve], &events);
        assert_eq!(thread.len(), 2);
        assert_eq!(thread[0].answer.as_deref(), Some("session 3 s, round 1"));
        assert_eq!(
            thread[0].ack.as_ref().map(|a| a.text.as_str()),
            Some("answered")
        );
        assert!(!thread[0].pending);
        assert_eq!(thread[1].line, "/approve");
        assert!(thread[1].pending, "no coordinator has read it");
        assert!(thread[1].ack.is_none());
    }

    #[test]
    fn a_refused_line_carries_its_error_ack() {
        let bad = line("/frobnicate", 0);
        let events = [event(&format!(
            r#"{{"id":"01JS0000000000000000000004",{BASE},"from":"system","kind":"ack","body":"error: unknown command","data":{{"ok":false,"inbox_offset":{}}}}}"#,
            bad.end
        ))];
        let thread = assemble(&[bad], &events);
        let ack = thread[0].ack.as_ref().unwrap();
        assert!(!ack.ok);
        assert_eq!(ack.text, "error: unknown command");
        assert!(!thread[0].pending);
    }
}
