//! Who may talk to Studio: a `Host` allow-list against DNS rebinding on every request, and on
//! every write the per-process token plus a same-origin check, so neither another web page nor
//! the game in the preview frame can act for the person.

use axum::http::{HeaderMap, StatusCode, header};

use super::api_error::ApiError;
use super::app::Shared;

/// The `Host` values a loopback server answers to on `port`.
pub(crate) fn loopback_hosts(port: u16) -> Vec<String> {
    vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

/// The `Host` values a server on `port` answers to: loopback, plus each `--allow-host` name (with
/// `:port` added when it names none). `--allow-remote` never switches this check off: a rebinding
/// attacker's name is never on the list.
pub(crate) fn allowed_hosts(port: u16, extra: &[String]) -> Vec<String> {
    let mut hosts = loopback_hosts(port);
    for host in extra {
        let host = host.trim().to_ascii_lowercase();
        if host.is_empty() {
            continue;
        }
        let has_port = host
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            && !host.ends_with(']');
        hosts.push(if has_port {
            host
        } else {
            format!("{host}:{port}")
        });
    }
    hosts
}

/// Whether a request's `Host` is one this server answers to.
pub(crate) fn host_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| allowed.iter().any(|a| a.eq_ignore_ascii_case(host)))
}

/// Name of the cookie a remote browser keeps the token in (set by opening `/?token=…`).
pub(crate) const TOKEN_COOKIE: &str = "crumb_token";

/// The token a request carries: the `X-Crumb-Token` header, the cookie, or a `token=` query.
pub(crate) fn sent_token<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<&'a str> {
    if let Some(value) = headers.get("x-crumb-token").and_then(|v| v.to_str().ok()) {
        return Some(value);
    }
    if let Some(value) = cookie(headers, TOKEN_COOKIE) {
        return Some(value);
    }
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// A cookie's value.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then_some(v)
        })
}

/// Whether `sent` is `token`, compared in constant time.
pub(crate) fn token_matches(sent: Option<&str>, token: &str) -> bool {
    sent.is_some_and(|sent| constant_time_eq(sent.as_bytes(), token.as_bytes()))
}

/// Why a write was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WriteRefusal {
    #[error(
        "missing or wrong X-Crumb-Token: this page came from another Studio process (restarted?); reload it"
    )]
    Token,
    #[error("cross-origin writes are refused")]
    Origin,
    #[error("the body must be JSON (Content-Type: application/json)")]
    ContentType,
}

impl WriteRefusal {
    pub(crate) fn status(self) -> StatusCode {
        match self {
            WriteRefusal::Token | WriteRefusal::Origin => StatusCode::FORBIDDEN,
            WriteRefusal::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }
}

/// Check a write: token, then origin, then content type.
pub(crate) fn check_write(
    headers: &HeaderMap,
    token: &str,
    allowed: &[String],
) -> Result<(), WriteRefusal> {
    let sent = headers.get("x-crumb-token").and_then(|v| v.to_str().ok());
    if !token_matches(sent, token) {
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
        let known = origin
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
pub(crate) const STUDIO_HEADERS: [(&str, &str); 4] = [
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
];

/// The Studio page's CSP: only its own scripts; frames only from the preview origins
/// (`http://*.localhost:<port>`: one origin per session).
pub(crate) fn studio_csp(preview_origin: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; frame-src {preview_origin}; object-src 'none'; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'"
    )
}

/// The preview's CSP: the game may load its own files and run, but connects nowhere else and can
/// only be framed by Studio. An IPv6 literal (`[::1]`) is not a CSP source expression — Chromium
/// rejects the whole directive's entry with a console error — so Studio opened at `[::1]` shows
/// the preview only through its "open ↗" link.
pub(crate) fn preview_csp(studio_origins: &[String]) -> String {
    let ancestors = studio_origins
        .iter()
        .filter(|h| !h.starts_with('['))
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

/// Whether a write request carries this Studio's token and comes from one of its hosts.
pub(crate) fn authorise(app: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    check_write(headers, &app.config.token, &app.hosts)
        .map_err(|refusal| ApiError(refusal.status(), refusal.to_string()))
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
        assert_eq!(check_write(&headers(&good), "secret", &allowed), Ok(()));
        let mut no_token = good;
        no_token[1] = ("x-crumb-token", "secreT");
        assert_eq!(
            check_write(&headers(&no_token), "secret", &allowed),
            Err(WriteRefusal::Token)
        );
        let mut evil = good;
        evil[2] = ("origin", "http://127.0.0.1:7322");
        assert_eq!(
            check_write(&headers(&evil), "secret", &allowed),
            Err(WriteRefusal::Origin)
        );
        let mut form = good;
        form[3] = ("content-type", "text/plain");
        assert_eq!(
            check_write(&headers(&form), "secret", &allowed),
            Err(WriteRefusal::ContentType)
        );
    }

    #[test]
    fn rebinding_hosts_are_refused() {
        let allowed = loopback_hosts(80);
        assert!(host_allowed(
            &headers(&[("host", "localhost:80")]),
            &allowed
        ));
        assert!(!host_allowed(
            &headers(&[("host", "evil.example:80")]),
            &allowed
        ));
        assert!(!host_allowed(&HeaderMap::new(), &allowed));
        let remote = allowed_hosts(80, &["studio.lan".into(), "box:9000".into()]);
        assert!(remote.contains(&"studio.lan:80".to_owned()));
        assert!(remote.contains(&"box:9000".to_owned()));
    }
}
