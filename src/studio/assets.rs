//! The web client in `studio/`, embedded in the binary: no build step, nothing to install.
//!
//! The page is served with this process's write token and the preview origin filled in, under a
//! CSP that allows only these files as scripts and only the preview origin as a frame.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::security::studio_csp;
use super::server::Shared;

const PAGE: &str = include_str!("../../studio/index.html");

/// Static files under `/assets/`: name, content type, content.
pub const ASSETS: [(&str, &str, &str); 7] = [
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
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../studio/style.css"),
    ),
];

/// `GET /`: the page, with the token in a meta tag.
pub async fn page(State(app): State<Shared>) -> Response {
    let html = PAGE
        .replace("{{TOKEN}}", &app.config.token)
        .replace("{{PREVIEW_ORIGIN}}", &app.preview_origin)
        .replace("{{VERSION}}", env!("CARGO_PKG_VERSION"));
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    if let Ok(csp) = HeaderValue::from_str(&studio_csp(&app.preview_origin)) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    response
}

/// `GET /assets/{file}`.
pub async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, body)) => ([(header::CONTENT_TYPE, *kind)], *body).into_response(),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}
