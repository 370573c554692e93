//! The artifact server: the artifacts folder over HTTP on an ephemeral `127.0.0.1` port.
//!
//! Only the loopback literal is used (the browser's resolver rules block every name, `localhost`
//! included). Requests whose path resolves outside the folder (through a symlink) or names a hard
//! link get 403 (a folder's `index.html` included); the
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
pub(crate) struct ArtifactServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ArtifactServer {
    /// Serve `root` on `127.0.0.1:0`.
    pub(crate) async fn start(root: &Path) -> std::io::Result<ArtifactServer> {
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
    pub(crate) fn url(&self, relative: &str) -> String {
        format!("http://{}/{}", self.addr, relative.trim_start_matches('/'))
    }

    /// The origin pages are served from, e.g. `http://127.0.0.1:41234`.
    pub(crate) fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    #[cfg(test)]
    pub(crate) fn port(&self) -> u16 {
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
    // A folder is served as its `index.html`, which is checked like any file.
    let served = if relative.is_empty() || real_root.join(relative).is_dir() {
        format!("{}/index.html", relative.trim_end_matches('/'))
    } else {
        relative.to_owned()
    };
    let refused = [relative, served.trim_start_matches('/')]
        .into_iter()
        .filter(|r| !r.is_empty())
        .any(|r| confine::resolve_inside(&real_root, r).is_err());
    if refused {
        return (
            StatusCode::FORBIDDEN,
            Body::from("outside the artifacts folder"),
        )
            .into_response();
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
    use super::{ArtifactServer, percent_decode};

    /// The status line of a plain `GET` to the server.
    async fn status(server: &ArtifactServer, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", server.port()))
            .await
            .unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.unwrap();
        reply.lines().next().unwrap_or_default().to_owned()
    }

    #[tokio::test]
    async fn a_hard_link_is_not_served_even_as_a_folder_index() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("artifacts");
        std::fs::create_dir_all(root.join("game")).unwrap();
        std::fs::create_dir_all(root.join("own")).unwrap();
        std::fs::write(dir.path().join("secret.html"), "secret").unwrap();
        std::fs::write(root.join("own/index.html"), "mine").unwrap();
        std::fs::hard_link(dir.path().join("secret.html"), root.join("game/index.html")).unwrap();
        let server = ArtifactServer::start(&root).await.unwrap();
        for path in ["/game/index.html", "/game/", "/game"] {
            assert!(status(&server, path).await.contains("403"), "{path}");
        }
        assert!(status(&server, "/own/").await.contains("200"));
    }

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
