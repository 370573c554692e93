//! Vocabulary shared by pipeline files and transcript events: verdicts and severities.
//!
//! Both the YAML routes (`when: { verdict: FAIL, severity: Critical }`) and the
//! `judge.score` events speak these words, so they live in one place.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A verifier's verdict. `REJECT` is routed like `FAIL` unless a pipeline says otherwise.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Partial,
    Fail,
    Reject,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Pass,
        Verdict::Partial,
        Verdict::Fail,
        Verdict::Reject,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Partial => "PARTIAL",
            Verdict::Fail => "FAIL",
            Verdict::Reject => "REJECT",
        }
    }

    /// Index into a verdict × severity matrix.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How serious a deviation is: `Critical` means the spec is wrong (re-plan),
/// `Important`/`Minor` mean the build needs a fix.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Severity {
    Critical,
    Important,
    Minor,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::Critical, Severity::Important, Severity::Minor];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "Critical",
            Severity::Important => "Important",
            Severity::Minor => "Minor",
        }
    }

    /// Index into a verdict × severity matrix.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a session ended. Declared by every `done:` route; the engine's own stops (budgets, limits,
/// the circuit breaker) end `stopped`. Exit codes follow the outcome, never the reason's spelling.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The work was accepted.
    Pass,
    /// The work was judged and failed.
    Fail,
    /// Accepted in part: the pipeline chose to end on an incomplete result.
    Partial,
    /// Turned down on purpose (the pipeline's or a person's decision).
    Rejected,
    /// A budget, limit or breaker ended the run before any declared outcome was reached.
    Stopped,
}

impl Outcome {
    /// Every outcome, in the order of their exit codes.
    pub const ALL: [Outcome; 5] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Partial,
        Outcome::Rejected,
        Outcome::Stopped,
    ];
    /// The outcomes a `done:` route may declare (`stopped` is the engine's alone).
    pub(crate) const DECLARABLE: [Outcome; 4] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Partial,
        Outcome::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Partial => "partial",
            Outcome::Rejected => "rejected",
            Outcome::Stopped => "stopped",
        }
    }

    /// The outcome spelled `word`, if any.
    pub fn parse(word: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == word)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Actors that are not pipeline roles. Role ids may not use these names.
pub const RESERVED_ACTORS: [&str; 4] = ["user", "system", "coordinator", "validator"];
