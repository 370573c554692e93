//! The `scoring:` block: the rubric's thresholds and the guards that correct a judge.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pipeline::choices::Guard;

/// Scoring rubric and thresholds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    /// The dimensions a judge scores, in order. Omitted: D1–D6, each 0–5, weight 1 (out of 30),
    /// with the listed `guards` deciding which of their properties apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<Vec<crate::pipeline::rubric::DimensionDecl>>,
    /// Aggregate (Σ weight × score over the rubric) at or above which the verdict is PASS.
    #[serde(default = "default_pass_at")]
    pub pass_at: f64,
    /// Aggregate at or above which the verdict is PARTIAL; below it is FAIL.
    #[serde(default = "default_partial_at")]
    pub partial_at: f64,
    /// Anti-deception guards applied to every `judge.score`. Omitted: all five, except that a
    /// pipeline without `qa:` leaves out the two that need a QA run (`pass_requires_qa`,
    /// `exec_from_qa`), which could only ever turn its verdicts into failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Vec<Guard>>,
}

impl Scoring {
    /// The guards that apply: the listed ones, else the default for a pipeline with or without
    /// `qa:` (see [`Scoring::guards`]).
    pub(crate) fn guards_for(&self, has_qa: bool) -> Vec<Guard> {
        match &self.guards {
            Some(listed) => listed.clone(),
            None => default_guards()
                .into_iter()
                .filter(|g| has_qa || !g.needs_qa())
                .collect(),
        }
    }
}

impl Default for Scoring {
    fn default() -> Self {
        Self {
            rubric: None,
            pass_at: default_pass_at(),
            partial_at: default_partial_at(),
            guards: None,
        }
    }
}

fn default_pass_at() -> f64 {
    24.0
}
fn default_partial_at() -> f64 {
    18.0
}
fn default_guards() -> Vec<Guard> {
    vec![
        Guard::PassRequiresQa,
        Guard::ExecFromQa,
        Guard::AcFailureCapsSpecFit,
        Guard::ReworkCapsConvergence,
        Guard::SameProviderDiscount,
    ]
}
