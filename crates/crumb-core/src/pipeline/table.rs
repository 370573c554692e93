//! The compiled form of a pipeline: what the engine executes.
//!
//! `compile` (in `pipeline::compile`) is the only producer; `validate`, `run`, the reducer and Studio
//! all consume this type, so they can never disagree about what a pipeline means. Everything here
//! is already parsed and checked: durations are milliseconds, sizes are bytes, role references are
//! known to exist. Lookups the reducer does per event are O(1).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::pipeline::choices::{CircuitAction, Combine, Guard, JoinMode};
use crate::pipeline::model::{BrowserSignal, Point};
use crate::vocab::{Outcome, Severity, Verdict};

/// A compiled pipeline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TransitionTable {
    /// `name` from the file.
    pub name: String,
    pub description: Option<String>,
    /// Roles in declaration order.
    pub roles: Vec<RoleSpec>,
    /// Routes in declaration order (first match wins).
    pub routes: Vec<CompiledRoute>,
    /// The QA run, if the pipeline declares one.
    pub qa: Option<QaSpec>,
    /// Kind → the engine slot it fills (plan or build), in declaration order.
    #[serde(default)]
    pub kinds: Vec<(String, crate::pipeline::kinds::Slot)>,
    /// The pipeline's own kind names (declared under `kinds:`, outside the vocabulary): the only
    /// [`crate::transcript::Kind::Declared`] names its sessions accept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared_kinds: Vec<String>,
    /// Kind → the JSON Schema its `data` must satisfy (`crumb event` enforces it).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub kind_schemas: std::collections::BTreeMap<String, serde_json::Value>,
    pub scoring: ScoringSpec,
    pub limits: LimitsSpec,
    /// Declared inputs, in declaration order (`goal` among them only when declared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<crate::pipeline::inputs::InputSpec>,
    /// Event kind → indexes into `routes` whose trigger is that kind, in order. Excludes verdict routes.
    pub by_kind: HashMap<String, Vec<usize>>,
    /// `[verdict][severity]` → the index of the route that handles that cell, if any.
    pub verdict_matrix: [[Option<usize>; 3]; 4],
}

/// One role, resolved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoleSpec {
    pub id: String,
    /// Template path as written, relative to the pipeline file.
    pub template: String,
    pub produces: Vec<String>,
    pub wall_timeout_ms: u64,
    pub idle_timeout_ms: u64,
    pub sees: Vec<String>,
    pub fallback: Vec<String>,
    pub description: Option<String>,
    /// The pipeline's binding for the role (`adapter:`), if it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<crate::pipeline::model::RoleAdapter>,
}

/// A route after compilation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompiledRoute {
    /// Position in the file's `routes` list.
    pub index: usize,
    pub trigger: Trigger,
    pub action: Action,
    /// Whether the spawned role receives the verifier's feedback (once).
    pub with_feedback: bool,
    /// Most fires per session (`max:`); beyond it the session stops with `route_budget:<n>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

/// What a route listens for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Trigger {
    /// An event of this kind (optionally only from one actor).
    Kind { kind: String, from: Option<String> },
    /// The corrected verdict of a `judge.score`, in any of these verdicts × severities.
    Verdict {
        verdicts: Vec<Verdict>,
        severities: Vec<Severity>,
    },
}

/// What a route does.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    Spawn {
        role: String,
    },
    /// A fan-out: every role at once, each its own effect (so resume is exact per branch).
    SpawnAll {
        roles: Vec<String>,
    },
    /// Collect the latest fan-out's verdicts; once `mode` is met, `combine` them into one verdict
    /// that takes the verdict routes.
    Join {
        mode: JoinMode,
        combine: Combine,
    },
    RunQa,
    /// End the session with a declared outcome; `reason` is what the `done` event records.
    Done {
        outcome: Outcome,
        reason: String,
    },
    AwaitHuman,
}

/// The QA run, resolved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QaSpec {
    pub timeout_ms: u64,
    pub entry: Option<String>,
    pub checks: Vec<CheckSpec>,
    /// Retries of a run that could not run (`qa.result` status `error`).
    #[serde(default)]
    pub retry: QaRetrySpec,
}

/// `qa.retry`, resolved.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct QaRetrySpec {
    pub max: u32,
    pub(crate) backoff_ms: u64,
}

impl Default for QaRetrySpec {
    fn default() -> Self {
        QaRetrySpec {
            max: 2,
            backoff_ms: 1000,
        }
    }
}

/// Longest wait before one retry, whatever the backoff and the attempt.
const MAX_RETRY_DELAY_MS: u64 = 5 * 60 * 1000;

impl QaRetrySpec {
    /// The wait before retry `attempt` (1 for the first): `backoff_ms` × 4^(attempt−1), so a
    /// machine that is briefly overloaded gets room quickly and a longer one is not hammered.
    pub fn delay_ms(&self, attempt: u32) -> u64 {
        let factor = 4u64.saturating_pow(attempt.saturating_sub(1));
        self.backoff_ms
            .saturating_mul(factor)
            .min(MAX_RETRY_DELAY_MS)
    }
}

/// One QA check, resolved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckSpec {
    pub id: String,
    pub blocking: bool,
    /// Per-check timeout; `None` means bounded only by the QA run's timeout.
    pub timeout_ms: Option<u64>,
    pub kind: CheckKindSpec,
}

/// A check's parameters with sizes and durations parsed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckKindSpec {
    File {
        path: String,
        min_bytes: Option<u64>,
        max_bytes: Option<u64>,
    },
    MaxBytes {
        glob: String,
        limit_bytes: u64,
    },
    Html {
        path: String,
    },
    Command {
        argv: Vec<String>,
        cwd: Option<String>,
        env: Vec<(String, String)>,
        expect_exit: i32,
    },
    Browser {
        wait_for: String,
        settle_ms: u64,
        fail_on: Vec<BrowserSignal>,
        keys: Vec<String>,
        clicks: Vec<Point>,
        screenshot: bool,
        require_non_blank: bool,
    },
    AcPredicates,
}

/// Scoring, resolved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScoringSpec {
    /// The declared dimensions (or the default rubric), in order; scores are indexed by position.
    pub rubric: Vec<crate::pipeline::rubric::DimensionSpec>,
    pub pass_at: f64,
    pub partial_at: f64,
    pub guards: Vec<Guard>,
}

/// Limits, resolved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LimitsSpec {
    pub max_respec: u32,
    pub max_verify: u32,
    pub(crate) tokens_warn: u64,
    pub tokens_hard: u64,
    pub(crate) wall_clock_warn_ms: u64,
    pub wall_clock_hard_ms: u64,
    pub stuck_after_errors: u32,
    pub(crate) circuit_open_after: u32,
    pub(crate) circuit_then: CircuitAction,
    /// The artifact store's cap, in MiB.
    pub max_store_mb: u64,
}

impl TransitionTable {
    /// The role with this id.
    pub fn role(&self, id: &str) -> Option<&RoleSpec> {
        self.roles.iter().find(|r| r.id == id)
    }

    /// Whether `id` is a role of this pipeline.
    pub fn is_role(&self, id: &str) -> bool {
        self.role(id).is_some()
    }

    /// The first route for an event of `kind` from `from`, if any.
    pub fn route_for(&self, kind: &str, from: &str) -> Option<&CompiledRoute> {
        self.by_kind
            .get(kind)?
            .iter()
            .map(|&i| &self.routes[i])
            .find(|r| match &r.trigger {
                Trigger::Kind { from: Some(f), .. } => f == from,
                _ => true,
            })
    }

    /// The slot `kind` fills, if the pipeline declares it.
    /// Whether a session of this pipeline accepts an event of `kind`: every vocabulary kind, and
    /// the declared names the pipeline lists.
    pub fn accepts_kind(&self, kind: crate::transcript::Kind) -> bool {
        match kind {
            crate::transcript::Kind::Declared(name) => {
                self.declared_kinds.iter().any(|k| k == name.as_str())
            }
            _ => true,
        }
    }

    pub fn slot(&self, kind: &str) -> Option<crate::pipeline::kinds::Slot> {
        self.kinds.iter().find(|(k, _)| k == kind).map(|(_, s)| *s)
    }

    /// Whether `role` produces a kind that fills `slot`.
    pub(crate) fn produces_slot(&self, role: &str, slot: crate::pipeline::kinds::Slot) -> bool {
        self.role(role)
            .is_some_and(|r| r.produces.iter().any(|k| self.slot(k) == Some(slot)))
    }

    /// The route for a plan-slot event without a route of its own: the route of the first plan
    /// kind that has one (a revised plan goes where the plan went).
    pub(crate) fn plan_route_for(&self, kind: &str, from: &str) -> Option<&CompiledRoute> {
        if self.slot(kind) != Some(crate::pipeline::kinds::Slot::Plan) {
            return None;
        }
        self.kinds
            .iter()
            .filter(|(k, s)| *s == crate::pipeline::kinds::Slot::Plan && k != kind)
            .find_map(|(k, _)| self.route_for(k, from))
    }

    /// The route handling a corrected verdict with a severity.
    pub fn route_for_verdict(
        &self,
        verdict: Verdict,
        severity: Severity,
    ) -> Option<&CompiledRoute> {
        self.verdict_matrix[verdict.index()][severity.index()].map(|i| &self.routes[i])
    }
}
