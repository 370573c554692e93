//! `POST /api/sessions/{id}/fork` `{"at", "mock_scenario"?, "bind"?: [..]}`: start `crumb fork`
//! from an event of a session in the background (the command line's code path, as a new session
//! runs `crumb run`) and answer with the fork's id once it exists.

use std::process::Stdio;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api::ApiError;
use super::server::Shared;
use super::sessions;
use super::write::{authorise, parse_json, read_log, wait_for_session};

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

pub async fn fork(
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
    let exe = app
        .config
        .crumb_exe
        .clone()
        .or_else(|| std::env::current_exe().ok())
        .ok_or_else(|| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot find the crumb binary".into(),
            )
        })?;
    let project = app
        .config
        .project_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .ok_or_else(|| bad("no project directory"))?;
    let log_dir = app.config.home.root().join("studio");
    let _ = std::fs::create_dir_all(&log_dir);
    let log_path = log_dir.join(format!("fork-{}.log", ulid::Ulid::new()));
    let home = app.config.home.clone();
    let before: std::collections::HashSet<String> = tokio::task::spawn_blocking(move || {
        sessions::all(&home).into_iter().map(|s| s.id).collect()
    })
    .await
    .unwrap_or_default();
    let log = std::fs::File::create(&log_path).map_err(ApiError::from)?;
    let log_err = log.try_clone().map_err(ApiError::from)?;
    let mut child = tokio::process::Command::new(&exe)
        .args(&args)
        .current_dir(&project)
        .env("CRUMB_HOME", app.config.home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err))
        .process_group(0)
        .spawn()
        .map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot start crumb fork: {e}"),
            )
        })?;
    let exited = std::sync::Arc::new(tokio::sync::Notify::new());
    let exited_tx = std::sync::Arc::clone(&exited);
    tokio::spawn(async move {
        let _ = child.wait().await;
        exited_tx.notify_one();
    });
    match wait_for_session(&app, &before, &goal, &exited).await {
        Some(fork) => Ok((
            StatusCode::ACCEPTED,
            Json(
                json!({ "session_id": fork, "parent": id, "at": request.at, "url": format!("/#/session/{fork}") }),
            ),
        )),
        None => Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!(
                "crumb fork did not start a session: {}",
                read_log(&log_path)
            ),
        )),
    }
}
