//! `POST /api/sessions/{id}/fork` `{"at", "mock_scenario"?, "bind"?: [..]}`: start `crumb fork`
//! from an event of a session in the background (the command line's code path, as a new session
//! runs `crumb run`) and answer with the fork's id once it exists.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::api_error::parse_json;
use super::app::Shared;
use super::new_session::start_session;
use super::security::authorise;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForkBody {
    /// The event to fork at: an id or a unique prefix of one.
    at: String,
    #[serde(default)]
    mock_scenario: Option<String>,
    /// `ROLE=ADAPTER` bindings, as `crumb fork --bind` takes them.
    #[serde(default)]
    bind: Vec<String>,
}

fn word(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | ':' | '.' | '@'))
}

pub(crate) async fn fork(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    authorise(&app, &headers)?;
    let request: ForkBody = parse_json(&body)?;
    let bad = |m: &str| ApiError(StatusCode::BAD_REQUEST, m.to_owned());
    if !word(&request.at, 26) || !request.at.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(bad("`at` must be an event id or a prefix of one"));
    }
    let dir = app
        .registry
        .locate(&app.config.home, &id)
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no session {id}")))?;
    let goal = dir.read_meta().map_err(|e| bad(&e.to_string()))?.goal;
    let mut args: Vec<String> = vec![
        "fork".into(),
        dir.path().display().to_string(),
        "--at".into(),
        request.at.clone(),
        "--wait".into(),
    ];
    if let Some(scenario) = request.mock_scenario.as_deref() {
        if !word(scenario, 32) {
            return Err(bad("unknown mock scenario"));
        }
        args.extend(["--mock-scenario".into(), scenario.to_owned()]);
    }
    for bind in &request.bind {
        if !word(bind, 128) || !bind.contains('=') {
            return Err(bad("each bind is ROLE=ADAPTER[:MODEL]"));
        }
        args.extend(["--bind".into(), bind.clone()]);
    }
    let project = app
        .config
        .project_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .ok_or_else(|| bad("no project directory"))?;
    let (fork, pid) = start_session(&app, &args, &project, &goal, "fork").await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(
            json!({ "session_id": fork, "pid": pid, "parent": id, "at": request.at, "url": format!("/#/session/{fork}") }),
        ),
    ))
}
