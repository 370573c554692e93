//! Preset files (`presets/*.yaml`): which adapter, model and effort each role runs on.
//!
//! A preset is independent of any one pipeline; it binds role ids by name, and roles it does not
//! name take `default`. Resolution order (CLI flag > project config > preset > ambient > mock)
//! lives in the runtime; this is only the file format.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A named set of role bindings.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "crumb preset")]
pub struct Preset {
    /// Short machine name of the preset (what `--preset` takes).
    pub name: String,
    /// One line saying what the preset is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Binding for every role the preset does not name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Binding>,
    /// Bindings per role id.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub roles: IndexMap<String, Binding>,
    /// Prices per model name, in US dollars per million tokens, for turns whose CLI reports no
    /// cost: they take precedence over crumb's shipped table (`prices.yaml`), which still prices
    /// the models not named here. A model is matched by its own name, else the longest name it
    /// starts with.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub prices: IndexMap<String, ModelPrice>,
}

/// A preset's `prices:` as a session keeps them: which preset declared them, and the prices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceOverride {
    /// The preset that declares them (recorded as an estimate's `price_table`).
    pub preset: String,
    pub models: IndexMap<String, ModelPrice>,
}

/// What one model costs, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Input tokens not read from a cache.
    #[schemars(range(min = 0))]
    pub input: f64,
    /// Output tokens.
    #[schemars(range(min = 0))]
    pub output: f64,
    /// Input tokens read from the prompt cache.
    #[schemars(range(min = 0))]
    pub cache_read: f64,
    /// Input tokens written to the prompt cache.
    #[schemars(range(min = 0))]
    pub cache_write: f64,
    /// Reasoning tokens counted apart from output (0 where output already includes them).
    #[schemars(range(min = 0))]
    pub reasoning: f64,
}

/// Where one role runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// Adapter: `mock`, `claude-code`, `codex`, `gemini-cli` or `command`.
    pub adapter: String,
    /// Model name passed to the adapter (adapter default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort, for adapters that support it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Harness the adapter runs inside (recorded in event metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    /// The model provider, used by the same-provider scoring guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    /// A model server the agent CLI talks to instead of its vendor's API — a local or
    /// self-hosted model: `ANTHROPIC_BASE_URL` for `claude-code` (an Anthropic Messages API),
    /// a `model_provider` for `codex` (an `OpenAI` Responses API, e.g. `http://127.0.0.1:8080/v1`),
    /// `GOOGLE_GEMINI_BASE_URL` for `gemini-cli`. Set `model` to a name that server serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the key for `base_url` (its value is passed as the CLI's
    /// key; without it a placeholder is sent, which local servers ignore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// For `adapter: command`: the program and its arguments (never run through a shell). Paths
    /// containing `/` are relative to this file's folder. Without it, a role's own
    /// `adapter: { command: [...] }` from the pipeline is used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
}

/// Reasoning effort. Each CLI accepts a subset: Claude Code `low`…`max`, Codex `minimal`…`xhigh`;
/// Gemini CLI has no effort setting. A level a CLI lacks runs at its nearest level, with a note in
/// the transcript saying so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Effort {
    /// The name used in presets and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }
}

/// The company whose model answers; `none` for deterministic adapters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Anthropic,
    Openai,
    Google,
    None,
}
