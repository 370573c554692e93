//! The two listeners, their routers and graceful shutdown.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::app::{App, Shared};
use super::config::StudioConfig;
use super::security::{
    STUDIO_HEADERS, TOKEN_COOKIE, allowed_hosts, cookie, host_allowed, sent_token, token_matches,
};
use super::sessions::Registry;
use super::{api, assets, control, files, new_session, say, stream};

/// Largest request body accepted (an inbox line is at most 16 KiB).
pub(crate) const MAX_BODY_BYTES: usize = 32 * 1024;

/// Serve Studio on `listener` and the game preview on `preview_listener` until `shutdown`
/// resolves; then streams are closed and in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    preview_listener: TcpListener,
    config: StudioConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let preview_port = preview_listener.local_addr()?.port();
    let hosts = allowed_hosts(port, &config.allow_hosts);
    let preview_hosts = allowed_hosts(preview_port, &config.allow_hosts);
    let (closing_tx, closing) = watch::channel(false);
    let app = Arc::new(App {
        config,
        registry: Registry::default(),
        hosts: hosts.clone(),
        preview_port,
        instance: super::config::new_token(),
        closing,
    });
    let studio = studio_router(Arc::clone(&app));
    let preview = files::preview_router(Arc::clone(&app), preview_hosts, &hosts);

    let mut closed_studio = closing_tx.subscribe();
    let mut closed_preview = closing_tx.subscribe();
    let studio_server = axum::serve(listener, studio).with_graceful_shutdown(async move {
        let _ = closed_studio.wait_for(|c| *c).await;
    });
    let preview_server =
        axum::serve(preview_listener, preview).with_graceful_shutdown(async move {
            let _ = closed_preview.wait_for(|c| *c).await;
        });
    tokio::spawn(async move {
        shutdown.await;
        let _ = closing_tx.send(true);
    });
    let (a, b) = tokio::join!(studio_server.into_future(), preview_server.into_future());
    a.and(b)
}

fn studio_router(app: Shared) -> Router {
    Router::new()
        .route("/", get(assets::page))
        .route("/assets/{file}", get(assets::asset))
        .route("/favicon.ico", get(assets::favicon))
        .route("/api/health", get(api::health))
        .route(
            "/api/sessions",
            get(api::sessions).post(new_session::new_session),
        )
        .route("/api/stream", get(stream::sessions_stream))
        .route("/api/pipelines", get(api::pipelines))
        .route("/api/pipelines/form", get(super::new_form::form))
        .route("/api/adapters", get(super::new_form::adapters))
        .route("/api/sessions/{id}", get(api::session))
        .route("/api/sessions/{id}/events", get(api::events))
        .route(
            "/api/sessions/{id}/events/{event_id}",
            get(super::large_event::full_event),
        )
        .route("/api/sessions/{id}/graph", get(api::graph))
        .route("/api/sessions/{id}/stream", get(stream::session_stream))
        .route("/api/sessions/{id}/inbox", post(say::inbox))
        .route("/api/sessions/{id}/thread", get(super::thread::thread))
        .route("/api/sessions/{id}/spans", get(super::waterfall::spans))
        .route("/api/sessions/{id}/resume", post(control::resume))
        .route("/api/sessions/{id}/stop", post(control::stop))
        .route("/api/sessions/{id}/artifacts", get(files::list))
        .route("/api/sessions/{id}/files/{*path}", get(files::file))
        .route("/api/sessions/{id}/roles", get(files::roles))
        .route("/api/sessions/{id}/logs/{role}/{n}", get(files::log))
        .route("/api/sessions/{id}/prompts/{role}/{n}", get(files::prompt))
        .route("/api/sessions/{id}/fork", post(super::fork::fork))
        .route(
            "/api/sessions/{id}/versions",
            get(super::versions::versions),
        )
        .route("/api/sessions/{id}/release", post(super::versions::release))
        .route(
            "/api/sessions/{id}/versions/{name}/zip",
            get(super::versions::download),
        )
        .route("/api/sessions/{id}/diff", get(super::versions::changed))
        .route("/api/batches", get(super::batches::list))
        .route("/batches", get(super::batches::page))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(Arc::clone(&app), guard))
        .with_state(app)
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found").into_response()
}

/// Refuse foreign `Host` headers (DNS rebinding), require the token for every request of a
/// remote Studio, and stamp the security headers.
async fn guard(State(app): State<Shared>, request: Request, next: Next) -> Response {
    if !host_allowed(request.headers(), &app.hosts) {
        return (StatusCode::MISDIRECTED_REQUEST, "unknown host").into_response();
    }
    let mut remember = false;
    if app.config.allow_remote {
        let sent = sent_token(request.headers(), request.uri().query());
        if !token_matches(sent, &app.config.token) {
            return (
                StatusCode::UNAUTHORIZED,
                "this Studio is reachable from the network and answers only with its token: \
                 open the address `crumb studio` printed (…/?token=…)",
            )
                .into_response();
        }
        remember = !token_matches(cookie(request.headers(), TOKEN_COOKIE), &app.config.token);
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if remember
        && let Ok(value) = HeaderValue::from_str(&format!(
            "{TOKEN_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            app.config.token
        ))
    {
        headers.insert(axum::http::header::SET_COOKIE, value);
    }
    for (name, value) in STUDIO_HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry("cache-control")
        .or_insert(HeaderValue::from_static("no-cache"));
    response
}
