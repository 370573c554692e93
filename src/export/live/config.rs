//! Where live spans go and how, from `--otlp-endpoint` and the variables every OpenTelemetry SDK
//! reads (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`), so a team's collector settings work
//! unchanged. A bad variable never stops a run: it is reported and the export is off or the
//! header is left out. Only a bad `--otlp-endpoint` is an error (a usage error, before the run
//! starts), because someone typed it.

use std::time::Duration;

/// What the live exporter needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveConfig {
    /// The full URL spans are sent to (`…/v1/traces`).
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// `service.name` of the resource.
    pub service: String,
    /// Each request's limit (connecting included).
    pub timeout: Duration,
}

/// The configuration, and what was wrong with the environment.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub config: Option<LiveConfig>,
    pub warnings: Vec<String>,
}

/// The default per-request timeout: short, so a slow collector costs the run nothing.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// `--otlp-endpoint`'s value parser: a bad URL is a usage error before anything runs.
pub(crate) fn endpoint_arg(value: &str) -> Result<String, String> {
    checked(value).map(|()| value.trim().to_owned())
}

/// Resolve the configuration from the flag (already checked by [`endpoint_arg`]) and the
/// environment (`env` reads one variable).
pub(crate) fn resolve(flag: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Resolved {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let mut resolved = Resolved::default();
    let url = if let Some(base) = flag {
        match traces_url(base) {
            Ok(url) => Some(url),
            Err(why) => {
                resolved
                    .warnings
                    .push(format!("--otlp-endpoint: {why}; live OTLP export is off"));
                None
            }
        }
    } else if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        None
    } else {
        let (name, url) = if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                checked(&url).map(|()| url),
            )
        } else if let Some(base) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            ("OTEL_EXPORTER_OTLP_ENDPOINT", traces_url(&base))
        } else {
            return resolved;
        };
        match url {
            Ok(url) => Some(url),
            Err(why) => {
                resolved
                    .warnings
                    .push(format!("{name}: {why}; live OTLP export is off"));
                None
            }
        }
    };
    let Some(url) = url else {
        return resolved;
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        for entry in var(name).unwrap_or_default().split(',') {
            if entry.trim().is_empty() {
                continue;
            }
            match header(entry) {
                Ok((key, value)) => {
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
                    headers.push((key, value));
                }
                Err(why) => resolved
                    .warnings
                    .push(format!("{name}: {why}; that header is not sent")),
            }
        }
    }
    let protocol =
        var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
    if let Some(protocol) = protocol.filter(|p| p.trim() != "http/json") {
        resolved.warnings.push(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={}: crumb sends OTLP/HTTP with JSON bodies (http/json), which OTLP/HTTP receivers accept",
            protocol.trim()
        ));
    }
    let timeout = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
        .map_or(DEFAULT_TIMEOUT, |ms| match ms.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Duration::from_millis(ms),
            _ => {
                resolved.warnings.push(format!(
                    "OTEL_EXPORTER_OTLP_TIMEOUT `{ms}` is not a number of milliseconds; using {} ms",
                    DEFAULT_TIMEOUT.as_millis()
                ));
                DEFAULT_TIMEOUT
            }
        });
    resolved.config = Some(LiveConfig {
        url,
        headers,
        service: var("OTEL_SERVICE_NAME")
            .map_or_else(|| "crumb".to_owned(), |s| s.trim().to_owned()),
        timeout,
    });
    resolved
}

/// `<base>/v1/traces`, as the OTLP exporter specification builds a signal's URL from a base.
fn traces_url(base: &str) -> Result<String, String> {
    checked(base)?;
    Ok(format!("{}/v1/traces", base.trim().trim_end_matches('/')))
}

/// An `http://` URL with a host.
fn checked(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| format!("not a URL ({e})"))?;
    match parsed.scheme() {
        "http" if parsed.host().is_some() => Ok(()),
        "http" => Err("no host".to_owned()),
        "https" => Err(
            "https is not supported (crumb's HTTP client is built without TLS); send to a local collector or agent over http://"
                .to_owned(),
        ),
        other => Err(format!("`{other}` is not http")),
    }
}

/// One `key=value` entry of `OTEL_EXPORTER_OTLP_HEADERS`, its value percent-decoded.
fn header(entry: &str) -> Result<(String, String), String> {
    let (key, value) = entry
        .split_once('=')
        .ok_or_else(|| format!("`{}` is not key=value", entry.trim()))?;
    let key = key.trim();
    let value = percent_encoding::percent_decode_str(value.trim())
        .decode_utf8()
        .map_err(|_| format!("the value of `{key}` is not UTF-8 once decoded"))?
        .into_owned();
    reqwest::header::HeaderName::from_bytes(key.as_bytes())
        .map_err(|_| format!("`{key}` is not a header name"))?;
    reqwest::header::HeaderValue::from_str(&value)
        .map_err(|_| format!("the value of `{key}` cannot be sent in a header"))?;
    Ok((key.to_owned(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)], flag: Option<&str>) -> Resolved {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        resolve(flag, &|name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn nothing_set_means_no_export() {
        let resolved = with(&[], None);
        assert!(resolved.config.is_none());
        assert!(resolved.warnings.is_empty());
    }

    #[test]
    fn the_base_endpoint_gets_the_traces_path_and_the_signal_endpoint_is_used_as_is() {
        let base = with(
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")],
            None,
        );
        assert_eq!(base.config.unwrap().url, "http://collector:4318/v1/traces");
        let signal = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://collector:4318/custom",
                ),
            ],
            None,
        );
        assert_eq!(signal.config.unwrap().url, "http://collector:4318/custom");
        let flag = with(
            &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env:4318/x")],
            Some("http://flag:4318"),
        );
        assert_eq!(flag.config.unwrap().url, "http://flag:4318/v1/traces");
    }

    #[test]
    fn headers_service_and_timeout_are_read() {
        let resolved = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "api-key=a%20b, x-team=one,bad",
                ),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-team=two"),
                ("OTEL_SERVICE_NAME", "pitches"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "500"),
            ],
            None,
        );
        let config = resolved.config.unwrap();
        assert_eq!(
            config.headers,
            [
                ("api-key".to_owned(), "a b".to_owned()),
                ("x-team".to_owned(), "two".to_owned())
            ]
        );
        assert_eq!(config.service, "pitches");
        assert_eq!(config.timeout, Duration::from_millis(500));
        assert_eq!(resolved.warnings.len(), 1, "{:?}", resolved.warnings);
        assert!(resolved.warnings[0].contains("`bad`"));
    }

    #[test]
    fn a_bad_variable_turns_export_off_with_a_warning_and_a_bad_flag_is_an_error() {
        let https = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318")], None);
        assert!(https.config.is_none());
        assert!(
            https.warnings[0].contains("https is not supported"),
            "{:?}",
            https.warnings
        );
        let disabled = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_SDK_DISABLED", "true"),
            ],
            None,
        );
        assert!(disabled.config.is_none());
        let error = endpoint_arg("not a url").unwrap_err();
        assert!(error.contains("not a URL"), "{error}");
        assert!(endpoint_arg("http://127.0.0.1:4318").is_ok());
        let grpc = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            None,
        );
        assert!(grpc.config.is_some());
        assert!(grpc.warnings[0].contains("http/json"));
    }
}
