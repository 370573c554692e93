//! `crumb doctor --preset NAME|PATH`: check a preset's bindings as a run would use them. A binding
//! with a `base_url` talks to that server, not to its vendor, so what matters is that the server
//! answers and the key variable it names is set — a vendor login is beside the point and is not
//! asked for. A binding without one needs its CLI logged in, as a default run does.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::Problem;
use super::agents::{self, AgentCheck, Login};
use crate::adapters::AdapterKind;
use crate::pipeline::preset::{Binding, Preset};
use crate::runtime::bindings::Environment;

/// How long a base URL may take to accept a connection and answer.
const REACH_TIMEOUT: Duration = Duration::from_secs(3);
/// The most of a server's answer read: its status line.
const ANSWER_BYTES: u64 = 512;

/// The preset and each of its bindings.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PresetCheck {
    pub name: String,
    pub path: PathBuf,
    pub bindings: Vec<BindingCheck>,
}

/// One binding (`default` or a role's) as this machine can serve it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BindingCheck {
    /// `default`, or the role id.
    pub binds: String,
    pub adapter: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// How the base URL answered (or why it did not); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reach_detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Whether `api_key_env` is set; absent when the binding names none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_set: Option<bool>,
    /// The CLI, for adapters that run one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cli: Option<AgentCheck>,
}

/// Check every binding of `preset` (read from `path`) in `env`; the problems it has.
pub(crate) fn check(
    preset: &Preset,
    path: &Path,
    env: &Environment,
) -> (PresetCheck, Vec<Problem>) {
    let mut problems = Vec::new();
    let bindings = preset
        .default
        .iter()
        .map(|binding| ("default".to_owned(), binding))
        .chain(preset.roles.iter().map(|(role, b)| (role.clone(), b)))
        .map(|(binds, binding)| check_binding(binds, binding, env, &mut problems))
        .collect();
    let check = PresetCheck {
        name: preset.name.clone(),
        path: path.to_owned(),
        bindings,
    };
    (check, problems)
}

fn check_binding(
    binds: String,
    binding: &Binding,
    env: &Environment,
    problems: &mut Vec<Problem>,
) -> BindingCheck {
    let who = format!("preset binding `{binds}` ({})", binding.adapter);
    let kind = binding.adapter.parse::<AdapterKind>().ok();
    let cli = kind
        .filter(|kind| kind.binary().is_some())
        .map(|kind| agents::check(kind, env));
    if let Some(cli) = &cli {
        if cli.path.is_none() {
            problems.push(Problem {
                what: format!("{who}: `{}` is not on PATH", cli.binary),
                fix: cli.fix.clone().unwrap_or_default(),
            });
        } else if binding.base_url.is_none() && cli.logged_in == Some(Login::No) {
            problems.push(Problem {
                what: format!(
                    "{who}: {} is not logged in ({})",
                    cli.binary,
                    cli.login_detail.as_deref().unwrap_or("")
                ),
                fix: cli.fix.clone().unwrap_or_default(),
            });
        }
    } else if kind.is_none() {
        problems.push(Problem {
            what: format!("{who}: no such adapter"),
            fix: "use mock, claude-code, codex, gemini-cli or command".to_owned(),
        });
    }
    let reach = binding.base_url.as_deref().map(reach);
    if let (Some(url), Some(Err(why))) = (&binding.base_url, &reach) {
        problems.push(Problem {
            what: format!("{who}: {url} does not answer: {why}"),
            fix: "start the model server, or correct `base_url` in the preset".to_owned(),
        });
    }
    let key_set = binding
        .api_key_env
        .as_deref()
        .map(|name| env.get(name).is_some_and(|value| !value.is_empty()));
    if let (Some(name), Some(false)) = (&binding.api_key_env, key_set) {
        problems.push(Problem {
            what: format!("{who}: `{name}` is not set, so the server gets no key"),
            fix: format!("export {name}=… before the run"),
        });
    }
    BindingCheck {
        binds,
        adapter: binding.adapter.clone(),
        model: binding.model.clone(),
        base_url: binding.base_url.clone(),
        reachable: reach.as_ref().map(Result::is_ok),
        reach_detail: reach.map(|answer| answer.unwrap_or_else(|why| why)),
        api_key_env: binding.api_key_env.clone(),
        key_set,
        cli,
    }
}

/// One line for the human report: what the binding runs and how this machine serves it.
pub(crate) fn describe(binding: &BindingCheck) -> String {
    let mut parts = vec![format!(
        "{:<10} {}{}",
        binding.binds,
        binding.adapter,
        binding
            .model
            .as_deref()
            .map(|model| format!(" {model}"))
            .unwrap_or_default()
    )];
    if let Some(cli) = &binding.cli {
        parts.push(match (&cli.path, cli.logged_in) {
            (None, _) => format!("{} NOT found", cli.binary),
            (Some(_), _) if binding.base_url.is_some() => format!("{} found", cli.binary),
            (Some(_), Some(Login::Yes)) => format!("{} logged in", cli.binary),
            (Some(_), Some(Login::No)) => format!("{} NOT logged in", cli.binary),
            (Some(_), _) => format!("{} login unknown", cli.binary),
        });
    }
    if let (Some(url), Some(detail)) = (&binding.base_url, &binding.reach_detail) {
        let verdict = if binding.reachable == Some(true) {
            "reachable"
        } else {
            "NOT reachable"
        };
        parts.push(format!("{url} {verdict} ({detail})"));
    }
    if let (Some(name), Some(set)) = (&binding.api_key_env, binding.key_set) {
        parts.push(format!("{name} {}", if set { "set" } else { "NOT set" }));
    }
    parts.join(" — ")
}

/// Whether the server at `url` answers: a TCP connection, and for `http` the status line of a
/// `GET` of the URL (any status counts: the server is there). `https` is checked to the
/// connection only, since crumb carries no TLS client.
fn reach(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|err| format!("not a URL ({err})"))?;
    let host = parsed.host_str().ok_or("the URL names no host")?.to_owned();
    let port = parsed
        .port_or_known_default()
        .ok_or("the URL names no port")?;
    let address = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .map_err(|err| format!("cannot resolve {host}: {err}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to no address"))?;
    let mut stream = TcpStream::connect_timeout(&address, REACH_TIMEOUT)
        .map_err(|err| format!("cannot connect to {address}: {err}"))?;
    if parsed.scheme() != "http" {
        return Ok(format!("{address} accepts connections"));
    }
    stream
        .set_read_timeout(Some(REACH_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(REACH_TIMEOUT)))
        .map_err(|err| err.to_string())?;
    let target = &parsed[url::Position::BeforePath..url::Position::AfterQuery];
    // One write: a server that answers on the first bytes and closes must not see a second.
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n",
        if target.is_empty() { "/" } else { target }
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|err| format!("cannot send a request: {err}"))?;
    let mut answer = Vec::new();
    let _ = stream.take(ANSWER_BYTES).read_to_end(&mut answer);
    let status = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    if status.starts_with("HTTP/") {
        Ok(format!("answered {status}"))
    } else {
        Err(format!(
            "{address} accepted the connection but sent no HTTP answer within {} s",
            REACH_TIMEOUT.as_secs()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_port_and_a_bad_url_do_not_answer() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let closed = reach(&format!("http://127.0.0.1:{port}/v1")).unwrap_err();
        assert!(closed.contains("cannot connect"), "{closed}");
        assert!(reach("not a url").unwrap_err().starts_with("not a URL"));
    }
}
