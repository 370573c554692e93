//! The closed set of adapters crumb knows, with the harness and provider each one implies.
//!
//! Adapter names are validated when flags, config files, presets and `/swap` lines are read, so an
//! unknown name is a usage error before anything runs, never a crash at spawn time.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a role's turn is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdapterKind {
    /// The built-in deterministic adapter: needs no agent CLI and no network.
    Mock,
    /// Anthropic's Claude Code CLI (`claude -p`).
    ClaudeCode,
    /// `OpenAI`'s Codex CLI (`codex exec`).
    Codex,
    /// Google's Gemini CLI (`gemini -p`).
    GeminiCli,
    /// Any argv template, prompt on stdin.
    Command,
}

impl AdapterKind {
    /// Every adapter, in the order they are listed to people.
    pub const ALL: [AdapterKind; 5] = [
        AdapterKind::Mock,
        AdapterKind::ClaudeCode,
        AdapterKind::Codex,
        AdapterKind::GeminiCli,
        AdapterKind::Command,
    ];

    /// The name used in flags, presets, config files and events.
    pub fn as_str(self) -> &'static str {
        match self {
            AdapterKind::Mock => "mock",
            AdapterKind::ClaudeCode => "claude-code",
            AdapterKind::Codex => "codex",
            AdapterKind::GeminiCli => "gemini-cli",
            AdapterKind::Command => "command",
        }
    }

    /// The executable an agent adapter runs, `None` for adapters that are not an agent CLI.
    pub fn binary(self) -> Option<&'static str> {
        match self {
            AdapterKind::ClaudeCode => Some("claude"),
            AdapterKind::Codex => Some("codex"),
            AdapterKind::GeminiCli => Some("gemini"),
            AdapterKind::Mock | AdapterKind::Command => None,
        }
    }

    /// The harness recorded in events when a binding does not name one.
    pub fn default_harness(self) -> &'static str {
        self.as_str()
    }

    /// The model provider recorded in events when a binding does not name one.
    pub fn default_provider(self) -> &'static str {
        match self {
            AdapterKind::ClaudeCode => "anthropic",
            AdapterKind::Codex => "openai",
            AdapterKind::GeminiCli => "google",
            AdapterKind::Mock | AdapterKind::Command => "none",
        }
    }
}

impl fmt::Display for AdapterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of [`AdapterKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown adapter `{name}` (known: mock, claude-code, codex, gemini-cli, command)")]
pub struct UnknownAdapter {
    pub name: String,
}

impl FromStr for AdapterKind {
    type Err = UnknownAdapter;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        AdapterKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| UnknownAdapter {
                name: name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in AdapterKind::ALL {
            assert_eq!(kind.as_str().parse::<AdapterKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }

    #[test]
    fn unknown_names_are_rejected() {
        assert!("claude".parse::<AdapterKind>().is_err());
        assert!("".parse::<AdapterKind>().is_err());
        assert!("MOCK".parse::<AdapterKind>().is_err());
    }
}
