//! Finding a running Studio, for `crumb run` to print its session's deep link.
//!
//! The probe asks `/api/health` and requires Studio's signature (`studio_version`), so another
//! server that happens to listen on the port is not mistaken for Studio (any HTTP answer is not
//! enough).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// Default Studio port.
pub(crate) const DEFAULT_PORT: u16 = 7321;
/// Environment variable overriding the port `crumb run` probes.
pub(crate) const PORT_ENV: &str = "CRUMB_STUDIO_PORT";

/// The deep link to a session in the Studio on `port`.
pub fn session_url(port: u16, session_id: &str) -> String {
    format!("http://127.0.0.1:{port}/#/session/{session_id}")
}

/// Whether a Studio answers on loopback `port` within `timeout`.
pub fn running_on(port: u16, timeout: Duration) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let request =
        format!("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    reply.starts_with("HTTP/1.1 200") && reply.contains("\"studio_version\"")
}

/// The deep link for `session_id` if a Studio runs on the configured port.
pub(crate) fn deep_link(session_id: &str) -> Option<String> {
    let port = std::env::var(PORT_ENV)
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(DEFAULT_PORT);
    running_on(port, Duration::from_millis(200)).then(|| session_url(port, session_id))
}
