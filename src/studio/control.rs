//! Finishing what a person starts from the page: Resume drives `crumb resume` itself (the same
//! coordinator rules as the command line: one coordinator per session, held by its lock), and Stop
//! asks a live coordinator to stop the way Ctrl-C does (SIGTERM: it stops its turns, records no
//! outcome and leaves the session exactly resumable).

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::app::Shared;
use super::new_session::{Spawned, read_log, spawn_crumb};
use super::security::authorise;
use crate::runtime::lock;
use crate::runtime::session_dir::SessionDir;

/// How long a resumed coordinator may take to hold the session's lock.
const TAKEOVER_DEADLINE: Duration = Duration::from_secs(15);

fn conflict(message: &str) -> ApiError {
    ApiError(StatusCode::CONFLICT, message.to_owned())
}

/// An authorised request's session, refused unless a coordinator holds it (`held`) or not.
fn session(
    app: &Shared,
    headers: &HeaderMap,
    id: &str,
    held: bool,
) -> Result<SessionDir, ApiError> {
    authorise(app, headers)?;
    let dir = app.session_dir(id)?;
    match (held, lock::is_held(dir.path())) {
        (false, true) => Err(conflict("a coordinator is already running this session")),
        (true, false) => Err(conflict("no coordinator is running this session")),
        _ => Ok(dir),
    }
}

/// `POST /api/sessions/{id}/resume`: start `crumb resume <id> --wait` in the background and answer
/// once it holds the session (or with its output when it refused).
pub(crate) async fn resume(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let dir = session(&app, &headers, &id, false)?;
    if crate::transcript::end::has_ended(&dir.transcript()) {
        return Err(conflict(
            "the session has ended; there is nothing to resume",
        ));
    }
    let cwd = app
        .config
        .project_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| dir.path().to_path_buf());
    let args: Vec<String> = vec![
        "resume".into(),
        "--wait".into(),
        "--".into(),
        dir.path().display().to_string(),
    ];
    let Spawned {
        pid,
        exited,
        log_path,
    } = spawn_crumb(&app, &args, &cwd, "resume")?;
    let deadline = tokio::time::Instant::now() + TAKEOVER_DEADLINE;
    let mut ended = false;
    loop {
        let path = dir.path().to_path_buf();
        let held = tokio::task::spawn_blocking(move || lock::is_held(&path))
            .await
            .unwrap_or(false);
        if held || ended {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "crumb resume did not take the session over: {}",
                    read_log(&log_path)
                ),
            ));
        }
        tokio::select! {
            () = exited.notified() => ended = true,
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
    let output = read_log(&log_path);
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "resumed": true,
            "pid": pid,
            // A resume that already ended (the session finished at once, or it was refused) says so.
            "exited": ended,
            "output": output,
        })),
    ))
}

/// `POST /api/sessions/{id}/stop`: SIGTERM to the session's live coordinator.
pub(crate) async fn stop(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let dir = session(&app, &headers, &id, true)?;
    let meta = dir.read_meta()?;
    // Only the lock holder's recorded pid, and only while the lock is held: never a stale one.
    let pid = meta
        .pid
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p > 1)
        .ok_or_else(|| conflict("the coordinator's pid is not recorded"))?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot stop it: {e}"),
        )
    })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "stopping": true,
            "pid": pid,
            "next": "the coordinator stops its live turns and exits; Resume continues the session",
        })),
    ))
}
