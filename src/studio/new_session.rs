//! Starting sessions from the page: `crumb run` (or `resume`, `fork`) in the background, the same
//! code path as the command line, answered once the new session exists on disk.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api_error::{ApiError, parse_json};
use super::app::Shared;
use super::security::authorise;
use super::sessions;

/// How long a new session may take to appear on disk.
const START_DEADLINE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewSession {
    /// A pipeline file, relative to the project (e.g. `pipelines/casual.yaml`).
    pipeline: String,
    /// The pitch / goal.
    pitch: String,
    #[serde(default)]
    preset: Option<String>,
    /// The mock adapter's scenario (`pass`, `partial`, …), for demos and tests.
    #[serde(default)]
    mock_scenario: Option<String>,
    /// The pipeline's declared inputs (`--set name=value`), checked by `crumb run` against
    /// their declarations.
    #[serde(default)]
    inputs: std::collections::BTreeMap<String, Value>,
    /// Every role on this adapter (`--adapter`).
    #[serde(default)]
    adapter: Option<String>,
    /// Role → adapter (`--bind role=adapter`).
    #[serde(default)]
    bindings: std::collections::BTreeMap<String, String>,
}

/// `POST /api/sessions` `{"pipeline", "pitch", "preset"?, "mock_scenario"?, "adapter"?,
/// "bindings"?, "inputs"?}`: start `crumb run` in the background
/// (the same code path as the command line) and answer with the new session's id once it exists.
pub(crate) async fn new_session(
    State(app): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    authorise(&app, &headers)?;
    let request: NewSession = parse_json(&body)?;
    let project = app
        .config
        .project_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .ok_or_else(|| ApiError(StatusCode::BAD_REQUEST, "no project directory".into()))?;
    let args = run_args(&request, &project)?;
    let (id, pid) = start_session(&app, &args, &project, request.pitch.trim(), "run").await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "session_id": id, "pid": pid, "url": format!("/#/session/{id}") })),
    ))
}

/// Start `crumb <args>` (a `run` or a `fork`) and wait for the new session of `pitch` to appear:
/// its id and the child's pid, or 422 with what the child said (a run `crumb run` refuses, with
/// its reason).
pub(super) async fn start_session(
    app: &Shared,
    args: &[String],
    project: &std::path::Path,
    pitch: &str,
    what: &str,
) -> Result<(String, Option<u32>), ApiError> {
    let home = app.config.home.clone();
    let before: std::collections::HashSet<String> = tokio::task::spawn_blocking(move || {
        sessions::all(&home).into_iter().map(|s| s.id).collect()
    })
    .await
    .unwrap_or_default();
    let Spawned {
        pid,
        exited,
        log_path,
    } = spawn_crumb(app, args, project, what)?;
    match wait_for_session(app, &before, pitch, &exited).await {
        Some(id) => Ok((id, pid)),
        None => Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "crumb {what} did not start a session: {}",
                read_log(&log_path)
            ),
        )),
    }
}

/// The `crumb run` arguments for a request, every value checked.
fn run_args(request: &NewSession, project: &std::path::Path) -> Result<Vec<String>, ApiError> {
    let bad = |m: &str| ApiError(StatusCode::BAD_REQUEST, m.to_owned());
    let pitch = request.pitch.trim();
    if pitch.is_empty() || pitch == "-" || pitch.len() > 4096 || pitch.contains(['\n', '\r', '\0'])
    {
        return Err(bad(
            "the pitch must be one non-empty line of at most 4096 bytes",
        ));
    }
    let pipeline = super::files::confine(project, &request.pipeline)
        .map_err(|_| bad("the pipeline must be an existing file inside the project"))?;
    // `--wait`: a session that needs a person stays live, so the person can answer from the page.
    let mut args: Vec<String> = vec!["run".into(), "--wait".into()];
    let word = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if let Some(preset) = request.preset.as_deref().filter(|p| !p.is_empty()) {
        if !word(preset) {
            return Err(bad("unknown preset"));
        }
        args.extend(["--preset".into(), preset.to_owned()]);
    }
    if let Some(scenario) = request.mock_scenario.as_deref().filter(|s| !s.is_empty()) {
        if !word(scenario) {
            return Err(bad("unknown mock scenario"));
        }
        args.extend(["--mock-scenario".into(), scenario.to_owned()]);
    }
    if let Some(adapter) = request.adapter.as_deref().filter(|a| !a.is_empty()) {
        if !word(adapter) {
            return Err(bad("unknown adapter"));
        }
        args.extend(["--adapter".into(), adapter.to_owned()]);
    }
    for (role, adapter) in &request.bindings {
        if adapter.is_empty() {
            continue;
        }
        if !word(role) || !word(adapter) {
            return Err(bad("a binding is `role = adapter`, both plain names"));
        }
        args.extend(["--bind".into(), format!("{role}={adapter}")]);
    }
    // Each value as `crumb run --set` takes it (text as it is, numbers and booleans as written);
    // `crumb run` checks it against the input's declaration and refuses with the reason.
    for (name, value) in &request.inputs {
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Null => continue,
            other => other.to_string(),
        };
        if !word(name) || text.len() > 4096 || text.contains(['\n', '\r', '\0']) {
            return Err(bad(
                "an input is a declared name and one line of at most 4096 bytes",
            ));
        }
        args.extend(["--set".into(), format!("{name}={text}")]);
    }
    // After `--`: a pitch such as `--help me` is text, never an option.
    args.extend([
        "--".into(),
        pipeline.display().to_string(),
        pitch.to_owned(),
    ]);
    Ok(args)
}

/// Poll the home until a new session with this pitch appears (its coordinator may already have
/// finished and cleared its pid), or the child exits.
async fn wait_for_session(
    app: &Shared,
    before: &std::collections::HashSet<String>,
    pitch: &str,
    exited: &tokio::sync::Notify,
) -> Option<String> {
    let deadline = tokio::time::Instant::now() + START_DEADLINE;
    let mut ended = false;
    loop {
        let home = app.config.home.clone();
        let before = before.clone();
        let pitch = pitch.to_owned();
        let found = tokio::task::spawn_blocking(move || {
            sessions::all(&home)
                .into_iter()
                .find(|s| !before.contains(&s.id) && s.goal == pitch)
                .map(|s| s.id)
        })
        .await
        .ok()
        .flatten();
        if found.is_some() || ended || tokio::time::Instant::now() >= deadline {
            return found;
        }
        tokio::select! {
            () = exited.notified() => ended = true,
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

/// A `crumb` process Studio started in the background (its own process group, reaped whenever
/// it ends; it outlives the request).
pub(crate) struct Spawned {
    pub pid: Option<u32>,
    pub exited: std::sync::Arc<tokio::sync::Notify>,
    /// Its stdout and stderr, under `<home>/studio/`.
    pub log_path: PathBuf,
}

/// Start `crumb <args>` in `cwd` with this Studio's home: the same code path as the command line.
pub(crate) fn spawn_crumb(
    app: &Shared,
    args: &[String],
    cwd: &std::path::Path,
    what: &str,
) -> Result<Spawned, ApiError> {
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
    let log_dir = app.config.home.root().join("studio");
    let _ = std::fs::create_dir_all(&log_dir);
    let log_path = log_dir.join(format!("{what}-{}.log", ulid::Ulid::new()));
    let log = std::fs::File::create(&log_path).map_err(ApiError::from)?;
    let log_err = log.try_clone().map_err(ApiError::from)?;
    let mut child = crate::process::command::spawned(&exe)
        .args(args)
        .current_dir(cwd)
        .env("CRUMB_HOME", app.config.home.root())
        .env("CRUMB_NO_OPEN", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err))
        .process_group(0)
        // The run outlives Studio: a person who closes Studio has not stopped the session.
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot start crumb {what}: {e}"),
            )
        })?;
    let pid = child.id();
    let exited = std::sync::Arc::new(tokio::sync::Notify::new());
    let exited_tx = std::sync::Arc::clone(&exited);
    tokio::spawn(async move {
        let _ = child.wait().await;
        exited_tx.notify_one();
    });
    Ok(Spawned {
        pid,
        exited,
        log_path,
    })
}

/// The last part of a log Studio kept, for an error message.
pub(crate) fn read_log(path: &PathBuf) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    crate::engine::state::clip(text.trim(), 2000)
}
