//! Who may talk to Studio: a `Host` allow-list against DNS rebinding on every request, and on
//! every write the per-process token plus a same-origin check, so neither another web page nor
//! the game in the preview frame can act for the person.

use axum::http::{HeaderMap, StatusCode, header};

/// The `Host` values a loopback server answers to on `port`.
pub fn loopback_hosts(port: u16) -> Vec<String> {
    vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

/// Whether a request's `Host` is one this server answers to.
pub fn host_allowed(headers: &HeaderMap, allowed: &[String], allow_remote: bool) -> bool {
    if allow_remote {
        return true;
    }
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| allowed.iter().any(|a| a.eq_ignore_ascii_case(host)))
}

/// Why a write was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteRefusal {
    #[error("missing or wrong X-Crumb-Token")]
    Token,
    #[error("cross-origin writes are refused")]
    Origin,
    #[error("the body must be JSON (Content-Type: application/json)")]
    ContentType,
}

impl WriteRefusal {
    pub fn status(self) -> StatusCode {
        match self {
            WriteRefusal::Token | WriteRefusal::Origin => StatusCode::FORBIDDEN,
            WriteRefusal::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }
}

/// Check a write: token, then origin, then content type.
pub fn check_write(
    headers: &HeaderMap,
    token: &str,
    allowed: &[String],
    allow_remote: bool,
) -> Result<(), WriteRefusal> {
    let sent = headers
        .get("x-crumb-token")
        .map(axum::http::HeaderValue::as_bytes)
        .unwrap_or_default();
    if !constant_time_eq(sent, token.as_bytes()) {
        return Err(WriteRefusal::Token);
    }
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site != "same-origin" && site != "none")
    {
        return Err(WriteRefusal::Origin);
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| WriteRefusal::Origin)?;
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let same = origin
            .strip_prefix("http://")
            .is_some_and(|o| o.eq_ignore_ascii_case(host));
        let known = allow_remote
            || origin
                .strip_prefix("http://")
                .is_some_and(|o| allowed.iter().any(|a| a.eq_ignore_ascii_case(o)));
        if !same || !known {
            return Err(WriteRefusal::Origin);
        }
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json {
        return Err(WriteRefusal::ContentType);
    }
    Ok(())
}

/// Compare without an early exit, so response timing says nothing about the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Headers on every Studio page and API answer.
pub const STUDIO_HEADERS: [(&str, &str); 4] = [
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
];

/// The Studio page's CSP: only its own scripts; frames only from the preview origin.
pub fn studio_csp(preview_origin: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; frame-src {preview_origin}; object-src 'none'; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'"
    )
}

/// The preview's CSP: the game may load its own files and run, but connects nowhere else and can
/// only be framed by Studio.
pub fn preview_csp(studio_origins: &[String]) -> String {
    let ancestors = studio_origins
        .iter()
        .map(|h| format!("http://{h}"))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "default-src 'self' data: blob:; script-src 'self' 'unsafe-inline' 'unsafe-eval' blob:; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' data: blob:; \
         connect-src 'self'; worker-src 'none'; object-src 'none'; base-uri 'self'; \
         form-action 'none'; frame-ancestors {ancestors}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn writes_need_token_origin_and_json() {
        let allowed = loopback_hosts(7321);
        let good = [
            ("host", "127.0.0.1:7321"),
            ("x-crumb-token", "secret"),
            ("origin", "http://127.0.0.1:7321"),
            ("content-type", "application/json"),
        ];
        assert_eq!(
            check_write(&headers(&good), "secret", &allowed, false),
            Ok(())
        );
        let mut no_token = good;
        no_token[1] = ("x-crumb-token", "secreT");
        assert_eq!(
            check_write(&headers(&no_token), "secret", &allowed, false),
            Err(WriteRefusal::Token)
        );
        let mut evil = good;
        evil[2] = ("origin", "http://127.0.0.1:7322");
        assert_eq!(
            check_write(&headers(&evil), "secret", &allowed, false),
            Err(WriteRefusal::Origin)
        );
        let mut form = good;
        form[3] = ("content-type", "text/plain");
        assert_eq!(
            check_write(&headers(&form), "secret", &allowed, false),
            Err(WriteRefusal::ContentType)
        );
    }

    #[test]
    fn rebinding_hosts_are_refused() {
        let allowed = loopback_hosts(80);
        assert!(host_allowed(
            &headers(&[("host", "localhost:80")]),
            &allowed,
            false
        ));
        assert!(!host_allowed(
            &headers(&[("host", "evil.example:80")]),
            &allowed,
            false
        ));
        assert!(!host_allowed(&HeaderMap::new(), &allowed, false));
    }
}
