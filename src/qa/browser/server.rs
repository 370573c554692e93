//! The artifact server: the artifacts folder over HTTP on an ephemeral `127.0.0.1` port.
//!
//! Only the loopback literal is used (the browser's resolver rules block every name, `localhost`
//! included). Requests whose path resolves outside the folder (through a symlink) get 403; the
//! favicon request every page makes is answered with 204 so it is never reported as a failure.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::task::JoinHandle;
use tower_http::services::ServeDir;

use crate::qa::confine;

/// A running server; stops when dropped.
pub struct ArtifactServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ArtifactServer {
    /// Serve `root` on `127.0.0.1:0`.
    pub async fn start(root: &Path) -> std::io::Result<ArtifactServer> {
        let real_root = Arc::new(root.canonicalize()?);
        let app = Router::new()
            .fallback_service(ServeDir::new(root).append_index_html_on_directories(true))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&real_root),
                confine_request,
            ));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(ArtifactServer { addr, task })
    }

    /// `http://127.0.0.1:<port>/<relative>`.
    pub fn url(&self, relative: &str) -> String {
        format!("http://{}/{}", self.addr, relative.trim_start_matches('/'))
    }

    /// The origin pages are served from, e.g. `http://127.0.0.1:41234`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for ArtifactServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn confine_request(
    State(real_root): State<Arc<PathBuf>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    if path == "/favicon.ico" && !real_root.join("favicon.ico").is_file() {
        return StatusCode::NO_CONTENT.into_response();
    }
    let decoded = percent_decode(&path);
    let relative = decoded.trim_start_matches('/');
    if !relative.is_empty() {
        match confine::resolve_inside(&real_root, relative) {
            Ok(_) => {}
            Err(_) => {
                return (
                    StatusCode::FORBIDDEN,
                    Body::from("outside the artifacts folder"),
                )
                    .into_response();
            }
        }
    }
    next.run(request).await
}

/// Decode `%XX` escapes (invalid ones are kept as written).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn decodes_escapes_and_keeps_broken_ones() {
        assert_eq!(percent_decode("/a%20b/%2e%2e/x"), "/a b/../x");
        assert_eq!(percent_decode("/%zz%4"), "/%zz%4");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,80}") {
            let _ = percent_decode(&s);
        }
    }
}
