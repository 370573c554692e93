//! What every Studio handler shares: the configuration, the watched sessions, the listeners'
//! hosts, and the way a handler gets a session's hub brought up to date.

use std::sync::Arc;

use axum::http::StatusCode;
use tokio::sync::watch;

use super::api_error::ApiError;
use super::config::StudioConfig;
use super::sessions::Registry;
use super::watched_session::WatchedSession;
use crate::runtime::session_dir::SessionDir;

/// Shared by every handler.
pub(crate) struct App {
    pub config: StudioConfig,
    pub registry: Registry,
    /// `Host` values of the Studio listener.
    pub hosts: Vec<String>,
    /// Port of the preview listener: each session's game is served from its own origin,
    /// `http://<session>.localhost:<preview port>`.
    pub preview_port: u16,
    /// Random per process: a page from an earlier Studio sees it change and says "restarted".
    pub instance: String,
    /// Flips to `true` on shutdown so open streams end and the server can finish.
    pub closing: watch::Receiver<bool>,
}

pub(crate) type Shared = Arc<App>;

impl App {
    /// The folder of session `id` (an id or a unique prefix), or 404.
    pub(crate) fn session_dir(&self, id: &str) -> Result<SessionDir, ApiError> {
        self.registry
            .locate(&self.config.home, id)
            .ok_or_else(|| ApiError::not_found("session"))
    }
}

/// The session's hub with its index up to date, and its reducer state too when `fold`.
pub(crate) async fn fresh_hub(
    app: &Shared,
    id: &str,
    fold: bool,
) -> Result<Arc<WatchedSession>, ApiError> {
    let hub = app
        .registry
        .hub(&app.config.home, id)
        .ok_or_else(|| ApiError::not_found("session"))?;
    let refreshed = Arc::clone(&hub);
    let read = tokio::task::spawn_blocking(move || {
        if fold {
            refreshed.fold()
        } else {
            refreshed.refresh().map(|_| ())
        }
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    match read {
        Ok(()) => Ok(hub),
        // Deleted while it was read: gone, not broken.
        Err(_) if app.registry.open_hub(id).is_none() => Err(ApiError::not_found("session")),
        Err(e) => Err(e.into()),
    }
}
