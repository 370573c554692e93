//! Installing the real CLIs into the cache folder, and pointing each at a model API the way
//! each CLI's own documentation describes (and `docs/agents.md`, "Local models", tells
//! users with a local model).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

use super::{Cli, Installed};
use crate::support::Crumb;

const PACKAGES: [&str; 3] = [
    "@anthropic-ai/claude-code",
    "@openai/codex",
    "@google/gemini-cli",
];
const BINARIES: [&str; 3] = ["claude", "codex", "gemini"];
/// A process timeout on `npm install`, so an unreachable registry fails instead of hanging.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// The cache folder: `$CRUMB_TEST_CACHE`, else `~/.cache/crumb-test/agents`.
pub fn cache() -> Option<PathBuf> {
    std::env::var_os("CRUMB_TEST_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/crumb-test/agents"))
        })
}

/// Install the three CLIs into the cache unless they are there already.
pub fn install() -> Result<Installed, String> {
    for tool in ["node", "npm"] {
        if which(tool).is_none() {
            return Err(format!(
                "`{tool}` is not on PATH, so the real agent CLIs cannot be installed from npm"
            ));
        }
    }
    let cache = cache().ok_or("neither CRUMB_TEST_CACHE nor HOME is set")?;
    let bin = cache.join("node_modules/.bin");
    if !BINARIES.iter().all(|name| bin.join(name).is_file()) {
        std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
        let mut child = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&cache)
            .args(PACKAGES)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run npm: {e}"))?;
        let status = child
            .wait_timeout(INSTALL_TIMEOUT)
            .map_err(|e| e.to_string())?;
        let Some(status) = status else {
            let _ = child.kill();
            return Err("npm install did not finish within 10 minutes".into());
        };
        if !status.success() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
            }
            let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
            return Err(format!("npm install failed ({status}): {tail}"));
        }
    }
    let versions = BINARIES
        .iter()
        .map(|name| (name.to_string(), version(&bin.join(name))))
        .collect();
    Ok(Installed { bin, versions })
}

fn version(binary: &Path) -> String {
    Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_or_else(
            |e| format!("unknown ({e})"),
            |out| String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        )
}

/// The preset that points every role at the model server at `url`: the user's path to a local
/// model, tested here against the fake API.
pub fn write_preset(dir: &Path, cli: Cli, url: &str) {
    let (base_url, model) = match cli {
        Cli::Claude => (url.to_owned(), "local-model"),
        // Codex sends its shell tool only for a model family it knows.
        Cli::Codex => (format!("{url}/v1"), "gpt-5-codex"),
        Cli::Gemini => (url.to_owned(), "gemini-2.5-flash"),
    };
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("local.yaml"),
        format!(
            "name: local\ndescription: Every role on {adapter} against a local model server.\ndefault: {{ adapter: {adapter}, model: {model}, base_url: \"{base_url}\", api_key_env: LOCAL_MODEL_API_KEY }}\n",
            adapter = cli.adapter()
        ),
    )
    .unwrap();
}

/// Keep the user's own logins and settings out of the run: a private `HOME`, no vendor keys.
pub fn isolate(command: Crumb, cli: Cli, home: &Path) -> Crumb {
    let command = command
        .env("HOME", home)
        .env("LOCAL_MODEL_API_KEY", "fake-key-for-a-local-api")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL");
    match cli {
        Cli::Claude => command
            .env_remove("ANTHROPIC_AUTH_TOKEN")
            .env_remove("CLAUDE_CODE_OAUTH_TOKEN")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1"),
        Cli::Codex => {
            std::fs::create_dir_all(home.join(".codex")).unwrap();
            command
                .env("CODEX_HOME", home.join(".codex"))
                .env_remove("CODEX_API_KEY")
                .env_remove("OPENAI_API_KEY")
        }
        Cli::Gemini => command
            .env_remove("GEMINI_API_KEY")
            .env_remove("GOOGLE_API_KEY")
            .env_remove("GOOGLE_GENAI_USE_VERTEXAI"),
    }
}
