//! The agent CLIs: found on `PATH`, their version, and whether they are logged in, asked through
//! their own status commands (`claude auth status`, `codex login status`) or read from the
//! environment. Credential files are never read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;

use crate::adapters::AdapterKind;
use crate::runtime::bindings::Environment;

/// How long a `--version` or status command may take before it counts as not answering.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// Whether a CLI can call its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Login {
    Yes,
    No,
    /// The CLI has no way to tell without spending a request.
    Unknown,
}

/// One agent CLI as found on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct AgentCheck {
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

impl AgentCheck {
    /// Installed and not known to be logged out.
    pub fn usable(&self) -> bool {
        self.path.is_some() && self.logged_in != Some(Login::No)
    }
}

/// The agent adapters crumb runs as CLIs, in the order people see them.
pub const AGENTS: [AdapterKind; 3] = [
    AdapterKind::ClaudeCode,
    AdapterKind::Codex,
    AdapterKind::GeminiCli,
];

/// Check `kind`'s CLI in `env` (its `PATH` and variables).
pub fn check(kind: AdapterKind, env: &Environment) -> AgentCheck {
    let binary = kind.binary().unwrap_or("none");
    let Some(path) = env.which(binary) else {
        return AgentCheck {
            adapter: kind,
            binary,
            path: None,
            version: None,
            logged_in: None,
            login_detail: None,
            fix: Some(install_fix(kind).to_owned()),
        };
    };
    let version = probe(&path, &["--version"], env)
        .filter(|out| out.code == Some(0))
        .and_then(|out| out.text.lines().next().map(|line| line.trim().to_owned()))
        .filter(|line| !line.is_empty());
    let (logged_in, detail) = login(kind, &path, env);
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

fn install_fix(kind: AdapterKind) -> &'static str {
    match kind {
        AdapterKind::ClaudeCode => "npm install -g @anthropic-ai/claude-code",
        AdapterKind::Codex => "npm install -g @openai/codex",
        AdapterKind::GeminiCli => "npm install -g @google/gemini-cli",
        AdapterKind::Mock | AdapterKind::Command => "",
    }
}

/// The fix for a CLI that is installed but cannot call its model.
pub fn login_fix(kind: AdapterKind) -> &'static str {
    match kind {
        AdapterKind::ClaudeCode => {
            "run `claude auth login`, or set ANTHROPIC_API_KEY (with ANTHROPIC_BASE_URL for a local model)"
        }
        AdapterKind::Codex => {
            "run `codex login`, or set CODEX_API_KEY, or configure a `model_provider` in ~/.codex/config.toml for a local model"
        }
        AdapterKind::GeminiCli => {
            "set GEMINI_API_KEY (with GOOGLE_GEMINI_BASE_URL for a local server), or run `gemini` once and choose a login"
        }
        AdapterKind::Mock | AdapterKind::Command => "",
    }
}

/// Whether `kind` can call its model: credentials in the environment first (what the CLI itself
/// uses before anything stored), then the CLI's own status command.
fn login(kind: AdapterKind, path: &Path, env: &Environment) -> (Login, String) {
    let set = |names: &[&'static str]| -> Option<&'static str> {
        names.iter().find(|name| env.get(name).is_some()).copied()
    };
    match kind {
        AdapterKind::ClaudeCode => {
            if let Some(name) = set(&[
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CODE_USE_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX",
            ]) {
                return (Login::Yes, format!("{name} is set"));
            }
            status_command(path, &["auth", "status"], env)
        }
        AdapterKind::Codex => {
            if let Some(name) = set(&["CODEX_API_KEY"]) {
                return (Login::Yes, format!("{name} is set"));
            }
            if let Some(provider) = codex_provider(env) {
                return (
                    Login::Yes,
                    format!("model provider `{provider}` in codex's config.toml (no login needed)"),
                );
            }
            status_command(path, &["login", "status"], env)
        }
        AdapterKind::GeminiCli => {
            if let Some(name) = set(&[
                "GEMINI_API_KEY",
                "GOOGLE_GENAI_USE_VERTEXAI",
                "GOOGLE_GENAI_USE_GCA",
            ]) {
                return (Login::Yes, format!("{name} is set"));
            }
            (
                Login::Unknown,
                "no GEMINI_API_KEY; gemini has no status command, so a cached Google login cannot be checked without a request".to_owned(),
            )
        }
        AdapterKind::Mock | AdapterKind::Command => (Login::Yes, "needs no login".to_owned()),
    }
}

/// `model_provider = "…"` (not `openai`) in codex's config: a provider with its own key or none.
/// This is codex's settings file, not its credential store (`auth.json` is never opened).
fn codex_provider(env: &Environment) -> Option<String> {
    let home = env.get("CODEX_HOME").map(PathBuf::from).or_else(|| {
        env.get("HOME")
            .map(|home| PathBuf::from(home).join(".codex"))
    })?;
    let text = std::fs::read_to_string(home.join("config.toml")).ok()?;
    text.lines()
        .take_while(|line| !line.trim_start().starts_with('['))
        .filter_map(|line| line.split_once('='))
        .find(|(key, _)| key.trim() == "model_provider")
        .map(|(_, value)| value.trim().trim_matches('"').to_owned())
        .filter(|provider| provider != "openai")
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

/// Run `path args` with stdin closed, bounded by [`PROBE_TIMEOUT`].
fn probe(path: &Path, args: &[&str], env: &Environment) -> Option<Probe> {
    let mut command = Command::new(path);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_CODE_ENTRYPOINT");
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
        assert!(!check.usable());
        assert_eq!(check.fix.as_deref(), Some("npm install -g @openai/codex"));
    }

    #[test]
    fn codex_s_provider_is_read_from_its_config_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "model = \"m\"\nmodel_provider = \"local\"\n[model_providers.local]\nmodel_provider = \"x\"\n",
        )
        .unwrap();
        let env = Environment::from_pairs([("CODEX_HOME", dir.path())]);
        assert_eq!(codex_provider(&env).as_deref(), Some("local"));
        std::fs::write(
            dir.path().join("config.toml"),
            "model_provider = \"openai\"\n",
        )
        .unwrap();
        assert_eq!(codex_provider(&env), None);
    }
}
