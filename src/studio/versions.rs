//! Studio's view of the artifact store and releases: a session's versions, releasing one from a
//! feed row, a version as a zip, a round's "what changed", and the preview of any round's tree
//! (`http://<session>.localhost:<port>/@round/<event>/…`, served from the store, so a game's
//! relative links stay inside that round).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api_error::{ApiError, parse_json};
use super::app::Shared;
use super::security::authorise;
use crate::runtime::artifact_store::tree::verified;
use crate::runtime::session_dir::SessionDir;
use crate::runtime::versions::manifest::Manifest;
use crate::runtime::versions::point::{ARTIFACTS_PREFIX, Opened, open, point};
use crate::runtime::versions::{diff, dir_of_session, list, release, zip};

/// The path prefix of a round's preview.
pub(crate) const ROUND_PREFIX: &str = "@round/";

fn bad(message: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, message.into())
}

/// Run `work` on the session `id` off the async threads.
async fn with_session<T: Send + 'static>(
    app: &Shared,
    id: &str,
    work: impl FnOnce(SessionDir, Opened) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let dir = app.session_dir(id)?;
    tokio::task::spawn_blocking(move || {
        let opened = open(&dir).map_err(bad)?;
        work(dir, opened)
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
}

/// `GET /api/sessions/{id}/versions`: the versions released from this session, oldest first.
pub(crate) async fn versions(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let dir = app.session_dir(&id)?;
    let found: Vec<Manifest> = list(&dir_of_session(dir.path()))
        .into_iter()
        .filter(|m| m.session == dir.id())
        .collect();
    Ok(Json(json!({ "versions": found })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseBody {
    /// The event whose tree to freeze (default: the build the final verdict judged).
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

/// `POST /api/sessions/{id}/release` `{"at"?, "name"?, "note"?}`: what `crumb release` does.
pub(crate) async fn release(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    authorise(&app, &headers)?;
    let request: ReleaseBody = parse_json(&body)?;
    let manifest = with_session(&app, &id, move |dir, opened| {
        let point = point(&opened.table, &opened.events, request.at.as_deref()).map_err(bad)?;
        release::release(
            &dir_of_session(dir.path()),
            &point,
            &release::Release {
                session: dir.path(),
                session_id: dir.id(),
                pipeline_hash: &opened.pipeline_hash,
                name: request.name.as_deref().filter(|n| !n.is_empty()),
                note: request.note.as_deref().filter(|n| !n.is_empty()),
            },
        )
        .map_err(|e| ApiError(StatusCode::CONFLICT, e))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(json!(manifest))))
}

/// `GET /api/sessions/{id}/versions/{name}/zip`: the version's files, each checked against its
/// manifest, as `<name>.zip`.
pub(crate) async fn download(
    State(app): State<Shared>,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let dir = app.session_dir(&id)?;
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
        return Err(ApiError::not_found("version"));
    }
    let version = dir_of_session(dir.path()).join(&name);
    let disposition = format!("attachment; filename=\"{}.zip\"", version_file_name(&name));
    let bytes = tokio::task::spawn_blocking(move || {
        let manifest = Manifest::read(&version).map_err(|_| ApiError::not_found("version"))?;
        let mut files = Vec::new();
        for file in &manifest.files {
            let bytes = std::fs::read(Manifest::file(&version, &file.path))?;
            if crumb_core::digest::sha256_hex(&bytes) != file.sha256 {
                return Err(ApiError(
                    StatusCode::CONFLICT,
                    format!("{} no longer has its recorded sha256", file.path),
                ));
            }
            files.push((format!("{name}/{}", file.path), bytes));
        }
        Ok(zip::zip(&files))
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    )
        .into_response())
}

/// A file name safe in a header.
fn version_file_name(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
        .take(64)
        .collect()
}

#[derive(Debug, Deserialize)]
pub(crate) struct DiffQuery {
    /// The earlier point (default: the last event before `b` that recorded files).
    a: Option<String>,
    b: String,
}

/// `GET /api/sessions/{id}/diff?a=EVENT&b=EVENT`: what changed between two points, as
/// `crumb diff --json` says it; without `a`, since the previous event that recorded files.
pub(crate) async fn changed(
    State(app): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<DiffQuery>,
) -> Result<Json<Value>, ApiError> {
    with_session(&app, &id, move |dir, opened| {
        let b_index = opened
            .events
            .iter()
            .position(|e| e.id == query.b)
            .ok_or_else(|| bad("`b` must be the full id of an event of the session"))?;
        let a = match query.a {
            Some(a) => a,
            None => opened.events[..b_index]
                .iter()
                .rev()
                .find(|e| !e.artifacts.is_empty())
                .or_else(|| opened.events.first())
                .map(|e| e.id.clone())
                .ok_or_else(|| bad("the session has no events"))?,
        };
        let rows = diff::between_points(dir.path(), &opened, &a, &query.b).map_err(bad)?;
        Ok(Json(json!({ "a": a, "b": query.b, "changes": rows })))
    })
    .await
}

/// The bytes of `path` in the tree after event `at` of session `dir` (`None`: not in that
/// tree, or not intact).
pub(crate) fn round_file(dir: &SessionDir, at: &str, path: &str) -> Option<Vec<u8>> {
    let opened = open(dir).ok()?;
    let point = point(&opened.table, &opened.events, Some(at)).ok()?;
    let sha = point.tree.get(path)?;
    verified(dir.path(), &format!("{ARTIFACTS_PREFIX}{path}"), sha).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_name_is_header_safe() {
        assert_eq!(version_file_name("v1\"\r\n.x"), "v1.x");
    }
}
