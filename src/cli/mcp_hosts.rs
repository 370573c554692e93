//! The snippet each agent host needs to start `crumb mcp` (`crumb mcp --print-config HOST`), each
//! in the host's own documented form: Claude Code's `claude mcp add` (or a project `.mcp.json`),
//! Codex's `~/.codex/config.toml`, Gemini CLI's `settings.json`.

use std::path::Path;

/// The agent hosts crumb prints a configuration for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    Claude,
    Codex,
    Gemini,
}

/// The snippet for `host` that starts `exe mcp --project project`.
pub(crate) fn snippet(host: Host, exe: &Path, project: &Path) -> String {
    let command = exe.display().to_string();
    let project = project.display().to_string();
    let json = |value: &str| serde_json::to_string(value).unwrap_or_default();
    let servers = serde_json::to_string_pretty(&serde_json::json!({
        "mcpServers": {
            "crumb": { "command": command, "args": ["mcp", "--project", project] }
        }
    }))
    .unwrap_or_default();
    match host {
        Host::Claude => format!(
            "# Claude Code: run once in the project\n\
             claude mcp add crumb -- {} mcp --project {}\n\
             \n\
             # or commit this as .mcp.json at the project root\n\
             {servers}\n",
            shell_words::quote(&command),
            shell_words::quote(&project),
        ),
        Host::Codex => format!(
            "# Codex: add to ~/.codex/config.toml\n\
             [mcp_servers.crumb]\n\
             command = {}\n\
             args = [\"mcp\", \"--project\", {}]\n",
            json(&command),
            json(&project),
        ),
        Host::Gemini => format!(
            "# Gemini CLI: merge into ~/.gemini/settings.json (or .gemini/settings.json in the project)\n\
             {servers}\n"
        ),
    }
}
