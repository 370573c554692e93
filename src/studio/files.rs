//! Files of a session: artifacts and QA output (listed, and served inert from the API origin),
//! per-role prompts and logs, and the preview server that runs the game on its own origin.
//!
//! Every path is resolved component by component (no `..`, no root, no prefix), then
//! canonicalised and required to stay under the canonical area root — so traversal, encoded
//! traversal and symlinks pointing out all fail, and a sibling like `artifacts-x/` can never pass
//! a string-prefix check. A file with more than one hard link is refused the same way
//! (`confine::hard_linked`): it may be a file outside under another name.

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::app::Shared;
use super::security::preview_csp;
use crate::qa::confine;
use crate::transcript::validate::is_actor_name;

/// Areas of a session directory Studio may serve files from.
pub(crate) const AREAS: [&str; 2] = ["artifacts", "qa"];
/// Most entries listed per session.
const MAX_LISTED: usize = 1000;
/// Deepest folder level listed.
const MAX_DEPTH: usize = 8;
/// Largest file served (64 MiB).
const MAX_SERVED: u64 = 64 * 1024 * 1024;
/// Largest log tail returned.
const MAX_LOG: u64 = 512 * 1024;

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathRefusal {
    /// The path tries to leave its area (`..`, absolute, symlink out).
    Forbidden,
    /// Nothing there.
    Missing,
}

impl From<PathRefusal> for ApiError {
    fn from(refusal: PathRefusal) -> Self {
        match refusal {
            PathRefusal::Forbidden => ApiError(
                StatusCode::FORBIDDEN,
                "path leaves the session's files".into(),
            ),
            PathRefusal::Missing => ApiError::not_found("file"),
        }
    }
}

/// Resolve `relative` (already percent-decoded) inside `root`, refusing every way out.
pub(crate) fn confine(root: &FsPath, relative: &str) -> Result<PathBuf, PathRefusal> {
    if relative.contains('\\') {
        return Err(PathRefusal::Forbidden);
    }
    let joined = if relative.is_empty() {
        root.to_path_buf()
    } else {
        confine::join_inside(root, relative).map_err(|_| PathRefusal::Forbidden)?
    };
    let root = root.canonicalize().map_err(|_| PathRefusal::Missing)?;
    match confine::real_location(&root, &joined) {
        confine::Location::Inside(real) if !confine::hard_linked(&real) => Ok(real),
        confine::Location::Inside(_) | confine::Location::Outside => Err(PathRefusal::Forbidden),
        confine::Location::Missing => Err(PathRefusal::Missing),
    }
}

/// `area/rest` split into a known area and the rest.
fn split_area(path: &str) -> Result<(&'static str, &str), PathRefusal> {
    let (area, rest) = path.split_once('/').unwrap_or((path, ""));
    AREAS
        .iter()
        .find(|a| **a == area)
        .map(|a| (*a, rest))
        .ok_or(PathRefusal::Forbidden)
}

/// A content type by extension; unknown files are bytes.
pub(crate) fn content_type(path: &FsPath) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "webmanifest") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("wav") => "audio/wav",
        Some("mp3") => "audio/mpeg",
        Some("ogg") => "audio/ogg",
        Some("woff2") => "font/woff2",
        Some("txt" | "md" | "log") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// `GET /api/sessions/{id}/artifacts`: files under `artifacts/` and `qa/`, with sizes.
pub(crate) async fn list(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let dir = app.session_dir(&id)?;
    let files = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        for area in AREAS {
            let root = dir.path().join(area);
            let Ok(root) = root.canonicalize() else {
                continue;
            };
            walk(&root, &root, area, 0, &mut out);
        }
        out
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(axum::Json(json!({ "files": files })).into_response())
}

fn walk(root: &FsPath, dir: &FsPath, area: &str, depth: usize, out: &mut Vec<Value>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if out.len() >= MAX_LISTED {
            return;
        }
        // `symlink_metadata`: links are not followed when listing.
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let path = entry.path();
        if meta.is_dir() {
            walk(root, &path, area, depth + 1, out);
        } else if meta.is_file() && !confine::hard_linked(&path) {
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let relative = relative.to_string_lossy().replace('\\', "/");
            out.push(json!({ "path": format!("{area}/{relative}"), "size": meta.len() }));
        }
    }
}

/// Read a confined file (bounded).
async fn read_confined(app: &Shared, id: &str, path: &str) -> Result<(PathBuf, Vec<u8>), ApiError> {
    let dir = app.session_dir(id)?;
    let (area, rest) = split_area(path)?;
    let real = confine(&dir.path().join(area), rest)?;
    let meta = tokio::fs::metadata(&real)
        .await
        .map_err(|_| PathRefusal::Missing)?;
    if !meta.is_file() {
        return Err(PathRefusal::Missing.into());
    }
    if meta.len() > MAX_SERVED {
        return Err(ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            "file too large to serve".into(),
        ));
    }
    let bytes = tokio::fs::read(&real)
        .await
        .map_err(|_| PathRefusal::Missing)?;
    Ok((real, bytes))
}

/// `GET /api/sessions/{id}/files/{area}/{path}`: a file, inert (sandboxed by CSP, never sniffed),
/// so opening an HTML artifact here cannot run it with Studio's origin.
pub(crate) async fn file(
    State(app): State<Shared>,
    Path((id, path)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (real, bytes) = read_confined(&app, &id, &path).await?;
    let kind = content_type(&real);
    let kind = if kind.starts_with("text/html")
        || kind.starts_with("image/svg")
        || kind.starts_with("text/javascript")
    {
        "text/plain; charset=utf-8"
    } else {
        kind
    };
    Ok((
        [
            (header::CONTENT_TYPE, kind),
            (
                header::CONTENT_SECURITY_POLICY,
                "sandbox; default-src 'none'",
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `GET /api/sessions/{id}/roles`: each role's prompt and log files, by spawn number.
pub(crate) async fn roles(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let dir = app.session_dir(&id)?;
    let meta = dir.read_meta()?;
    let spawns = |folder: &str, suffix: &str, role: &str| -> Vec<u32> {
        let prefix = format!("{role}-");
        let mut numbers: Vec<u32> = std::fs::read_dir(dir.path().join(folder))
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.strip_prefix(&prefix)?
                            .strip_suffix(suffix)?
                            .parse()
                            .ok()
                    })
                    .collect()
            })
            .unwrap_or_default();
        numbers.sort_unstable();
        numbers
    };
    let roles: Vec<Value> = meta
        .roles
        .iter()
        .map(|role| {
            json!({
                "role": role,
                "prompts": spawns("prompts", ".md", role),
                "logs": spawns("logs", ".log", role),
            })
        })
        .collect();
    Ok(axum::Json(json!({ "roles": roles })).into_response())
}

async fn role_file(
    app: &Shared,
    id: &str,
    role: &str,
    n: &str,
    log: bool,
) -> Result<Response, ApiError> {
    let dir = app.session_dir(id)?;
    if !is_actor_name(role) {
        return Err(ApiError(StatusCode::BAD_REQUEST, "not a role name".into()));
    }
    let n: u32 = n.parse().map_err(|_| {
        ApiError(
            StatusCode::BAD_REQUEST,
            "spawn number must be a number".into(),
        )
    })?;
    let path = if log {
        dir.log_path(role, n)
    } else {
        dir.prompt_path(role, n)
    };
    // Confined exactly as artifacts are: a symlink or hard link in `logs/` or `prompts/` could
    // name any file the server can read.
    let area = path.parent().map(FsPath::to_path_buf).unwrap_or_default();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let real = confine(&area, &name).map_err(|refusal| match refusal {
        PathRefusal::Missing => ApiError::not_found(if log { "log" } else { "prompt" }),
        PathRefusal::Forbidden => refusal.into(),
    })?;
    let text = tokio::task::spawn_blocking(move || tail_text(&real, MAX_LOG))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .ok_or_else(|| ApiError::not_found(if log { "log" } else { "prompt" }))?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// The last `max` bytes of a file as text (lossy), marking a cut.
fn tail_text(path: &FsPath, max: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    file.take(max).read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    Some(if start > 0 {
        format!("… ({start} earlier bytes not shown)\n{text}")
    } else {
        text
    })
}

/// `GET /api/sessions/{id}/logs/{role}/{n}`.
pub(crate) async fn log(
    State(app): State<Shared>,
    Path((id, role, n)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    role_file(&app, &id, &role, &n, true).await
}

/// `GET /api/sessions/{id}/prompts/{role}/{n}`.
pub(crate) async fn prompt(
    State(app): State<Shared>,
    Path((id, role, n)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    role_file(&app, &id, &role, &n, false).await
}

/// State of the preview listener.
struct Preview {
    app: Shared,
    /// `Host` values of the preview listener without a session label (`localhost:<port>`, …).
    hosts: Vec<String>,
    csp: String,
}

/// Name of the cookie a remote browser keeps a session's preview key in.
const PREVIEW_COOKIE: &str = "crumb_preview";

/// The preview origins: `http://<session>.localhost:<port>/{path}` serves that session's
/// artifacts and nothing else, so each game has its own storage and same-origin fetches and no
/// game can read another session's files.
pub(crate) fn preview_router(app: Shared, hosts: Vec<String>, studio_hosts: &[String]) -> Router {
    let preview = Arc::new(Preview {
        csp: preview_csp(studio_hosts),
        app,
        hosts,
    });
    Router::new()
        .route("/", get(preview_file))
        .route("/{*path}", get(preview_file))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&preview),
            preview_guard,
        ))
        .with_state(preview)
}

/// The session a preview `Host` names: `<ulid>.<allowed host>`.
fn preview_session(headers: &axum::http::HeaderMap, hosts: &[String]) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let (label, rest) = host.split_once('.')?;
    let id = label.to_ascii_uppercase();
    (crate::transcript::validate::is_ulid(&id)
        && hosts.iter().any(|h| h.eq_ignore_ascii_case(rest)))
    .then_some(id)
}

/// The key a remote browser needs for a session's preview (derived from the token, so it cannot
/// be guessed and opens no other session).
pub(crate) fn preview_key(token: &str, id: &str) -> String {
    let mut key = crumb_core::digest::sha256_hex(format!("{token}:preview:{id}").as_bytes());
    key.truncate(32);
    key
}

async fn preview_guard(
    State(preview): State<Arc<Preview>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(id) = preview_session(request.headers(), &preview.hosts) else {
        return (StatusCode::MISDIRECTED_REQUEST, "unknown host").into_response();
    };
    if request.method() != axum::http::Method::GET && request.method() != axum::http::Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "read-only").into_response();
    }
    let mut remember = None;
    if preview.app.config.allow_remote {
        let key = preview_key(&preview.app.config.token, &id);
        let queried = request
            .uri()
            .query()
            .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("k=")));
        let cookie = super::security::cookie(request.headers(), PREVIEW_COOKIE);
        if !super::security::token_matches(cookie, &key) {
            if !super::security::token_matches(queried, &key) {
                return (StatusCode::UNAUTHORIZED, "open the preview from Studio").into_response();
            }
            remember = Some(key);
        }
    }
    request.extensions_mut().insert(PreviewSession(id));
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if let Some(key) = remember
        && let Ok(value) = HeaderValue::from_str(&format!(
            "{PREVIEW_COOKIE}={key}; HttpOnly; SameSite=Lax; Path=/"
        ))
    {
        headers.insert(header::SET_COOKIE, value);
    }
    if let Ok(csp) = HeaderValue::from_str(&preview.csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}

/// The session whose origin a preview request came to (set by the guard).
#[derive(Clone)]
struct PreviewSession(String);

async fn preview_file(
    State(preview): State<Arc<Preview>>,
    axum::Extension(PreviewSession(id)): axum::Extension<PreviewSession>,
    path: Option<Path<String>>,
) -> Result<Response, ApiError> {
    let path = path.map(|Path(p)| p).unwrap_or_default();
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path
    };
    if let Some(round) = path.strip_prefix(super::versions::ROUND_PREFIX) {
        return round_file(&preview.app, &id, round).await;
    }
    let (real, bytes) = read_confined(&preview.app, &id, &format!("artifacts/{path}")).await?;
    Ok(([(header::CONTENT_TYPE, content_type(&real))], bytes).into_response())
}

/// `@round/<event>/<path>`: the file as it was after that event, from the session's store.
async fn round_file(app: &Shared, id: &str, round: &str) -> Result<Response, ApiError> {
    let (at, path) = round.split_once('/').unwrap_or((round, ""));
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path.to_owned()
    };
    let dir = app.session_dir(id)?;
    let at = at.to_owned();
    let kind = content_type(FsPath::new(&path));
    let bytes = tokio::task::spawn_blocking(move || super::versions::round_file(&dir, &at, &path))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .ok_or(PathRefusal::Missing)?;
    Ok(([(header::CONTENT_TYPE, kind)], bytes).into_response())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{PathRefusal, confine};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn confined_paths_never_leave_the_root(parts in proptest::collection::vec(prop_oneof!["\\.\\.", "\\.", "a", "b", "link", "", "/", "%2e%2e", "\\\\"], 0..8)) {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("artifacts");
            std::fs::create_dir_all(root.join("a/b")).unwrap();
            std::fs::write(root.join("a/b/file"), "ok").unwrap();
            std::fs::write(dir.path().join("secret"), "no").unwrap();
            std::os::unix::fs::symlink(dir.path(), root.join("a/link")).unwrap();
            let relative = parts.join("/");
            if let Ok(real) = confine(&root, &relative) {
                prop_assert!(real.starts_with(root.canonicalize().unwrap()), "{relative} → {}", real.display());
            }
        }
    }

    #[test]
    fn a_sibling_sharing_the_prefix_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("artifacts");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(dir.path().join("artifacts-x")).unwrap();
        std::fs::write(dir.path().join("artifacts-x/s.txt"), "secret").unwrap();
        assert_eq!(
            confine(&root, "../artifacts-x/s.txt"),
            Err(PathRefusal::Forbidden)
        );
        assert_eq!(confine(&root, "/etc/passwd"), Err(PathRefusal::Forbidden));
        assert_eq!(confine(&root, "nope.txt"), Err(PathRefusal::Missing));
    }
}
