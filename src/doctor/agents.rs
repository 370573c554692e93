//! The agent CLIs: found on `PATH`, their version, and whether they are logged in, as each
//! adapter's `Adapter::login_check` says: read
//! from the environment, or asked of the CLI's own status command (`claude auth status`, `codex
//! login status`), which runs here. Credential files are never read.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;

use crate::adapters::AdapterKind;
pub(crate) use crate::adapters::Login;
use crate::adapters::adapter::LoginCheck;
use crate::runtime::bindings::Environment;

/// How long a `--version` or status command may take before it counts as not answering.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// One agent CLI as found on this machine.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AgentCheck {
    pub adapter: AdapterKind,
    pub binary: &'static str,
    /// `None`: not on `PATH`.
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    pub logged_in: Option<Login>,
    /// How the login was established (or why it is unknown / missing).
    pub login_detail: Option<String>,
    /// What to do when it cannot be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The agent adapters crumb runs as CLIs (those with a binary), in the order people see them.
pub(crate) fn agents() -> impl Iterator<Item = AdapterKind> {
    AdapterKind::ALL
        .iter()
        .copied()
        .filter(|kind| kind.binary().is_some())
}

/// Check `kind`'s CLI in `env` (its `PATH` and variables).
pub(crate) fn check(kind: AdapterKind, env: &Environment) -> AgentCheck {
    let adapter = kind.adapter();
    let binary = adapter.binary().unwrap_or("none");
    let Some(path) = env.which(binary) else {
        return AgentCheck {
            adapter: kind,
            binary,
            path: None,
            version: None,
            logged_in: None,
            login_detail: None,
            fix: Some(adapter.install_hint().unwrap_or_default().to_owned()),
        };
    };
    let version = probe(&path, adapter.version_args(), env)
        .filter(|out| out.code == Some(0))
        .and_then(|out| out.text.lines().next().map(|line| line.trim().to_owned()))
        .filter(|line| !line.is_empty());
    let (logged_in, detail) = match adapter.login_check(env) {
        LoginCheck::Known(login, detail) => (login, detail),
        LoginCheck::StatusCommand(args) => status_command(&path, args, env),
    };
    let fix = (logged_in == Login::No).then(|| login_fix(kind).to_owned());
    AgentCheck {
        adapter: kind,
        binary,
        path: Some(path),
        version,
        logged_in: Some(logged_in),
        login_detail: Some(detail),
        fix,
    }
}

/// The fix for a CLI that is installed but cannot call its model.
pub(crate) fn login_fix(kind: AdapterKind) -> &'static str {
    kind.adapter().login_hint().unwrap_or_default()
}

/// Run a status command: exit 0 logged in, 1 logged out, anything else unknown. Its own words
/// (first line of stdout or stderr) are the detail.
fn status_command(path: &Path, args: &[&str], env: &Environment) -> (Login, String) {
    let command = format!(
        "`{} {}`",
        path.file_name().unwrap_or_default().to_string_lossy(),
        args.join(" ")
    );
    match probe(path, args, env) {
        None => (Login::Unknown, format!("{command} did not answer")),
        Some(out) => {
            // A JSON answer (`claude auth status`) on one line; else the last line said (codex
            // prints warnings before "Not logged in").
            let text = out.text.trim();
            let said: String = if text.starts_with('{') {
                text.split_whitespace().collect::<Vec<_>>().join(" ")
            } else {
                text.lines()
                    .map(str::trim)
                    .rfind(|line| !line.is_empty())
                    .unwrap_or("")
                    .to_owned()
            }
            .chars()
            .take(200)
            .collect();
            match out.code {
                Some(0) => (Login::Yes, format!("{command}: {said}")),
                Some(1) => (Login::No, format!("{command}: {said}")),
                code => (Login::Unknown, format!("{command} exited {code:?}: {said}")),
            }
        }
    }
}

struct Probe {
    code: Option<i32>,
    /// stdout, else stderr.
    text: String,
}

/// Run `path args` with stdin closed, bounded by [`PROBE_TIMEOUT`], and no adapter's nesting
/// guard set (doctor may run inside an agent CLI).
fn probe(path: &Path, args: &[&str], env: &Environment) -> Option<Probe> {
    let mut command = crate::process::command::blocking(path);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for guard in AdapterKind::ALL
        .iter()
        .flat_map(|kind| kind.adapter().nesting_guards())
    {
        command.env_remove(guard);
    }
    if let Some(path_var) = env.get("PATH") {
        command.env("PATH", path_var);
    }
    let child = command.spawn().ok()?;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = receiver.recv_timeout(PROBE_TIMEOUT).ok()?.ok()?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let text = if stdout.trim().is_empty() {
        String::from_utf8_lossy(&output.stderr).into_owned()
    } else {
        stdout
    };
    Some(Probe {
        code: output.status.code(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_cli_says_how_to_install_it() {
        let env = Environment::from_pairs([("PATH", "/nonexistent")]);
        let check = check(AdapterKind::Codex, &env);
        assert_eq!(check.path, None);
        assert_eq!(check.fix.as_deref(), Some("npm install -g @openai/codex"));
    }
}
