//! The `routes:` list: what each route listens for and what it does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocab::{Outcome, Severity, Verdict};

/// One routing rule: when an event matches `on` (and `from`/`when`), do exactly one action.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Event kind to match, `verdict` for the corrected verdict of a `judge.score`, or `qa.error`
    /// for a `qa.result` whose checks could not run (after `qa.retry` is spent).
    pub on: String,
    /// Only events from this role (or actor) match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Verdict conditions; only with `on: verdict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// Spawn this role, or several at once (`spawn: [judge-a, judge-b]`): a fan-out that a later
    /// `join:` route collects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn: Option<OneOrMany<String>>,
    /// Collect the branches of the latest fan-out (`on:` their kind, `judge.score`): fire once
    /// `all` reported, on the first (`any`), or once `{ quorum: n }` did. Needs `combine:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<crate::pipeline::choices::JoinMode>,
    /// How a join combines its branches' corrected verdicts into the one the verdict routes see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combine: Option<crate::pipeline::choices::Combine>,
    /// Run a built-in step. Only `qa` exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunStep>,
    /// End the session with this outcome: `pass`, `fail`, `partial` or `rejected`, or
    /// `{ outcome: <word>, reason: <snake_case word> }` to also name the reason recorded in `done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<DoneSpec>,
    /// Wait for a person (`/approve` or `/veto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#await: Option<AwaitWho>,
    /// What the spawned role is given besides the usual context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<With>,
    /// Most times this route may fire in one session; one more stops it with
    /// `route_budget:<route>`. Every loop that neither a verdict, a re-plan nor a person bounds
    /// needs one, so no pipeline can loop forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max: Option<u32>,
}

/// Verdict conditions of a route.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// One verdict or a list; absent means any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<OneOrMany<Verdict>>,
    /// One severity or a list; absent means any. A verdict without a declared severity counts as `Important`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<OneOrMany<Severity>>,
}

/// A single value or a list of values.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "OneOrMany_{T}")]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// Built-in steps a route can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStep {
    /// The pipeline's `qa:` checks.
    Qa,
}

/// A terminal route's declared outcome. The exit code follows the outcome, never the reason.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum DoneSpec {
    /// An outcome word alone (`done: pass`); any other word is a validation error.
    Word(#[schemars(schema_with = "declarable_outcome")] String),
    /// The outcome and the reason the `done` event records.
    Full {
        /// `pass`, `fail`, `partial` or `rejected`: what the exit code follows.
        #[schemars(schema_with = "declarable_outcome")]
        outcome: Outcome,
        /// A `snake_case` word; defaults to `verdict_pass` for `pass`, else the outcome word.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// The outcomes a `done:` may declare, as the schema states them: `stopped` is the engine's own
/// (budgets, limits, breakers), so the schema refuses it as `validate` does.
fn declarable_outcome(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": Outcome::DECLARABLE.map(Outcome::as_str),
        "description": "`pass`, `fail`, `partial` or `rejected`: what the exit code follows.",
    })
}

impl DoneSpec {
    /// The outcome and the reason, when the outcome is declarable (`None` for an unknown word).
    pub fn resolve(&self) -> Option<(Outcome, String)> {
        let (outcome, reason) = match self {
            DoneSpec::Word(word) => (Outcome::parse(word)?, None),
            DoneSpec::Full { outcome, reason } => (*outcome, reason.clone()),
        };
        if outcome == Outcome::Stopped {
            return None;
        }
        let reason = reason
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| default_reason(outcome).to_owned());
        Some((outcome, reason))
    }
}

/// The reason a `done:` records when it names none: `verdict_pass` for pass (what transcripts
/// have always said), else the outcome word.
pub(crate) fn default_reason(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "verdict_pass",
        other => other.as_str(),
    }
}

/// Who a route waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AwaitWho {
    /// A person, through Studio or `crumb say`.
    Human,
}

/// Extra context handed to a spawned role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum With {
    /// The verifier's feedback and suggested change, for the next spawn only.
    Feedback,
}
