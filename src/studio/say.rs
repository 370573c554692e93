//! The line Studio writes for a person: one line into a session's `inbox.txt`, parsed first with
//! the inbox grammar (as `crumb say` does), so a bad line is answered at once and never written.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api_error::{ApiError, parse_json};
use super::app::Shared;
use super::security::authorise;
use crate::runtime::inbox::{UserCommand, append_line, parse_line};
use crate::runtime::lock;
use crate::runtime::meta::SessionStatus;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InboxBody {
    line: String,
}

/// `POST /api/sessions/{id}/inbox` `{"line": "/approve"}`: 202 with what the line means, or 400
/// with the grammar's message (nothing written).
pub(crate) async fn inbox(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    authorise(&app, &headers)?;
    let InboxBody { line } = parse_json(&body)?;
    let dir = app.session_dir(&id)?;
    let meta = dir.read_meta()?;
    let line = line.trim().to_owned();
    if line.contains(['\n', '\r']) {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "one line at a time: no line breaks".into(),
        ));
    }
    let command = match parse_line(&line, &meta.roles) {
        Ok(Some(command)) => command,
        Ok(None) => {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                "nothing to send: the line is blank or a comment".into(),
            ));
        }
        Err(err) => return Err(ApiError(StatusCode::BAD_REQUEST, err.to_string())),
    };
    let inbox = dir.inbox();
    let written = line.clone();
    let offset = tokio::task::spawn_blocking(move || append_line(&inbox, &written))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let coordinator_live = lock::is_held(dir.path());
    // Ended: by meta, by the transcript's `session.end`, or by the `done` the engine folded.
    let ended = meta.status == SessionStatus::Done
        || crate::transcript::end::has_ended(&dir.transcript())
        || app.registry.open_hub(dir.id()).is_some_and(|hub| {
            hub.try_lock()
                .is_some_and(|inner| inner.replay.state.done.is_some())
        });
    let note = if ended {
        Some("the session has ended: the line is recorded but changes nothing".to_owned())
    } else if coordinator_live {
        None
    } else {
        Some(format!(
            "no coordinator is running: press Resume (or run `crumb resume {}`) and it applies",
            dir.id()
        ))
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "accepted": true,
            "line": line,
            "command": describe(&command),
            "inbox_offset": offset,
            "live": coordinator_live,
            "ended": ended,
            "note": note,
        })),
    ))
}

/// What a parsed line will do, in a few words (shown under the line in the command bar).
pub(crate) fn describe(command: &UserCommand) -> String {
    let on = |role: &Option<String>| {
        role.as_ref()
            .map_or_else(|| "every role".to_owned(), |r| format!("@{r}"))
    };
    match command {
        UserCommand::Approve { .. } => "approve the awaited result".into(),
        UserCommand::Veto { .. } => "veto the current result".into(),
        UserCommand::Answer { .. } => "answer what the session awaits".into(),
        UserCommand::Pause { role, .. } => format!(
            "pause {}",
            role.as_ref()
                .map_or("the session".to_owned(), |r| format!("@{r}"))
        ),
        UserCommand::Resume { role } => format!(
            "resume {}",
            role.as_ref()
                .map_or("the session".to_owned(), |r| format!("@{r}"))
        ),
        UserCommand::Goto { role, .. } => format!("run @{role} next"),
        UserCommand::Swap { role, adapter } => format!("run @{role} on {}", adapter.as_str()),
        UserCommand::Append { role, .. } => format!("add to the next prompt of {}", on(role)),
        UserCommand::Cancel { role, .. } => format!("cancel the live spawn of {}", on(role)),
        UserCommand::ResetCircuit { .. } => "reset the circuit breaker".into(),
        UserCommand::Ask { topic } => format!("ask: {topic}"),
        UserCommand::Note { .. } => "note for the record".into(),
        UserCommand::Redo { .. } => "redo the current step".into(),
        UserCommand::Direct { role, .. } => format!("message for @{role}'s next turn"),
        UserCommand::Message { .. } => "message for every role's next spawn".into(),
    }
}
