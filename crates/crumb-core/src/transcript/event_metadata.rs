//! `metadata`: provenance, usage and bookkeeping of an event.
//!
//! Closed on purpose (unknown keys are rejected): the engine reads several of these fields
//! (`provider`, token counts, `effect_id`, `ack_for`), and a misspelt key silently ignored would
//! change what a replay computes. Legacy transcripts with other keys are read in raw mode.
//! `harness` and `provider` are free strings because adapters are declared by pipelines, not here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Provenance, usage and bookkeeping. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// `private` events are hidden from other agents' views; the engine still reduces them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
    /// Harness that produced the event (e.g. `claude-code`, `codex`, `mock`). Stamped by `crumb event`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    /// Model vendor (`anthropic`, `openai`, `google`, `none`). Stamped by `crumb event`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Model name. Stamped by `crumb event`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The harness's own session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter_session_id: Option<String>,
    /// Id of the runner component that wrote the event, e.g. `qa-check-effect@v1`. Runner-owned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// True when the runner synthesised the event deterministically. Runner-owned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deterministic: Option<bool>,
    /// Deterministic id of the engine effect that produced this event, so a resume re-issues only
    /// effects without a result. Runner-owned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_id: Option<String>,
    /// On `judge.score`: whether the verifier's provider differs from the builder's (display only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_provider: Option<bool>,
    /// Source of evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_kind: Option<EvidenceKind>,
    /// Turn number within a spawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// Input tokens used (counted against the token budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    /// Output tokens used (counted against the token budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    /// Reasoning tokens used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_tokens: Option<u64>,
    /// Prompt-cache tokens read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Prompt-cache tokens written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// Cost in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub cost_usd: Option<f64>,
    /// Wall time of the spawn or call, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// On `ack`: the `user.*` event acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9A-HJKMNP-TV-Z]{26}$"))]
    pub ack_for: Option<String>,
    /// On `/ask` answers: the question's event id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9A-HJKMNP-TV-Z]{26}$"))]
    pub in_reply_to: Option<String>,
    /// Ids of `user.*` events whose effects the spawn that wrote this consumed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = r"^[0-9A-HJKMNP-TV-Z]{26}$")))]
    pub consumed_intervene_ids: Vec<String>,
    /// On `audit`: the violations found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit_violations: Vec<String>,
}

/// Who may see an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// Everyone sees it (the default when absent).
    Public,
    /// Hidden from other agents' views.
    Private,
}

/// Where evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceKind {
    /// A video clip.
    Video,
    /// A screenshot.
    Screenshot,
    /// Text only.
    Text,
}
