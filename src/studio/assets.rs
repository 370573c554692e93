//! The web client in `studio/`, embedded in the binary: no build step, nothing to install.
//!
//! The page is served with this process's write token and the preview origin filled in, under a
//! CSP that allows only these files as scripts and only the preview origin as a frame.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::app::Shared;
use super::security::studio_csp;

const PAGE: &str = include_str!("../../studio/index.html");

/// Static files under `/assets/`: name, content type, content.
pub const ASSETS: [(&str, &str, &str); 13] = [
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/api.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/dom.js"),
    ),
    (
        "graph.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/graph.js"),
    ),
    (
        "panels.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/panels.js"),
    ),
    (
        "feed.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/feed.js"),
    ),
    (
        "session.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/session.js"),
    ),
    (
        "command.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/command.js"),
    ),
    (
        "versions.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/versions.js"),
    ),
    (
        "outcome.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/outcome.js"),
    ),
    (
        "alerts.js",
        "text/javascript; charset=utf-8",
        include_str!("../../studio/alerts.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../studio/style.css"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("../../studio/favicon.svg"),
    ),
];

/// `GET /favicon.ico`: browsers ask for it before the page names its icon; answered with the
/// page's own icon rather than a 404 on every load.
pub(crate) async fn favicon() -> Response {
    asset(Path("favicon.svg".to_owned())).await
}

/// `GET /`: the page, with the token, this process's instance id and the preview origins in
/// meta tags.
pub(crate) async fn page(State(app): State<Shared>, headers: HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let (pattern, frames) = preview_origins(host, app.preview_port);
    let html = PAGE
        .replace("{{TOKEN}}", &app.config.token)
        .replace("{{INSTANCE}}", &app.instance)
        .replace("{{PREVIEW_ORIGIN}}", &pattern)
        .replace("{{VERSION}}", env!("CARGO_PKG_VERSION"));
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    if let Ok(csp) = HeaderValue::from_str(&studio_csp(&frames)) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    response
}

/// `GET /assets/{file}`.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, body)) => ([(header::CONTENT_TYPE, *kind)], *body).into_response(),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

/// The preview origin of a session as a pattern (`http://{session}.localhost:<port>`), and the
/// CSP source that allows all of them: one origin per session, so a game's storage and fetches
/// work and no game can read another session's files. Browsers resolve `*.localhost` to loopback
/// without DNS; a remote browser uses the name it reached Studio by (an `--allow-host`).
pub(crate) fn preview_origins(host: &str, port: u16) -> (String, String) {
    let name = host
        .rsplit_once(':')
        .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(name, _)| name)
        .to_ascii_lowercase();
    let name = if name.is_empty()
        || name == "127.0.0.1"
        || name == "[::1]"
        || name.parse::<std::net::IpAddr>().is_ok()
    {
        "localhost".to_owned()
    } else {
        name
    };
    (
        format!("http://{{session}}.{name}:{port}"),
        format!("http://*.{name}:{port}"),
    )
}
