//! `scores` of a `judge.score` event: six dimensions, the claimed aggregate and verdict, and the
//! verifier's feedback. Everything is declared and enum-checked (`deviation` and
//! `suggested_change` included; an unknown severity is an error, never a silent default).
//!
//! The object is closed: a misspelt field is an error returned to the agent, not silently ignored.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocab::{Severity, Verdict};

/// The dimension slots of `scores`, top-level keys each scored 0–5 (the transcript format's own;
/// any other rubric id travels under `scores.dims`).
pub const SLOT_IDS: [&str; 6] = ["D1", "D2", "D3", "D4", "D5", "D6"];

/// Highest score of one dimension.
pub const DIMENSION_MAX: f64 = 5.0;

/// A verifier's scores. The engine recomputes `aggregate` and `verdict`; the values here are the
/// verifier's claim and are kept as such.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scores {
    /// Spec fit: acceptance criteria met, with evidence.
    #[serde(rename = "D1", default, skip_serializing_if = "Option::is_none")]
    pub d1: Option<Dimension>,
    /// Execution: always taken from the latest `qa.result`, never from the model.
    #[serde(rename = "D2", default, skip_serializing_if = "Option::is_none")]
    pub d2: Option<Dimension>,
    /// Observability.
    #[serde(rename = "D3", default, skip_serializing_if = "Option::is_none")]
    pub d3: Option<Dimension>,
    /// Convergence.
    #[serde(rename = "D4", default, skip_serializing_if = "Option::is_none")]
    pub d4: Option<Dimension>,
    /// Intervention response / quality.
    #[serde(rename = "D5", default, skip_serializing_if = "Option::is_none")]
    pub d5: Option<Dimension>,
    /// Portability.
    #[serde(rename = "D6", default, skip_serializing_if = "Option::is_none")]
    pub d6: Option<Dimension>,
    /// Dimensions of a declared rubric whose id is not D1–D6, keyed by id (scale declared by the
    /// pipeline's `scoring.rubric`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dims: std::collections::BTreeMap<String, Dimension>,
    /// Claimed aggregate (Σ weight × score over the pipeline's rubric; 0–30 for D1–D6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub aggregate: Option<f64>,
    /// Claimed verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// What is wrong, for the next spawn of the role that repairs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// A concrete change to make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_change: Option<String>,
    /// How serious the deviation is; selects the repair route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviation: Option<Deviation>,
    /// References to the judging trace (`step.judge` event ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub courteval: Option<CourtEval>,
    /// Guard violations. Written by the engine's `audit`; ignored when a verifier supplies it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit_violations: Vec<String>,
}

impl Scores {
    /// The dimensions D1–D6 in order, with their names.
    pub fn dimensions(&self) -> [(&'static str, Option<&Dimension>); 6] {
        [
            ("D1", self.d1.as_ref()),
            ("D2", self.d2.as_ref()),
            ("D3", self.d3.as_ref()),
            ("D4", self.d4.as_ref()),
            ("D5", self.d5.as_ref()),
            ("D6", self.d6.as_ref()),
        ]
    }

    /// Score the dimension `id`: a D1–D6 slot, else an entry of `dims` (the inverse of
    /// [`Scores::score`]).
    pub fn set(&mut self, id: &str, dimension: Dimension) {
        let slot = match id {
            "D1" => &mut self.d1,
            "D2" => &mut self.d2,
            "D3" => &mut self.d3,
            "D4" => &mut self.d4,
            "D5" => &mut self.d5,
            "D6" => &mut self.d6,
            other => {
                self.dims.insert(other.to_owned(), dimension);
                return;
            }
        };
        *slot = Some(dimension);
    }

    /// The dimension scored under `id`: a D1–D6 slot, else an entry of `dims`.
    pub fn score(&self, id: &str) -> Option<&Dimension> {
        match id {
            "D1" => self.d1.as_ref(),
            "D2" => self.d2.as_ref(),
            "D3" => self.d3.as_ref(),
            "D4" => self.d4.as_ref(),
            "D5" => self.d5.as_ref(),
            "D6" => self.d6.as_ref(),
            other => self.dims.get(other),
        }
    }
}

/// One scored dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dimension {
    /// 0–5 in a D1–D6 slot; 0 to the declared scale under `dims`.
    #[schemars(range(min = 0.0))]
    pub score: f64,
    /// Who owns this dimension's value.
    pub source: ScoreSource,
    /// Where the value was looked up, e.g. `qa.result.exec_exit_code`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup: Option<String>,
    /// Acceptance-criteria items or event ids supporting the score.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// Who produced a dimension's score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ScoreSource {
    /// The verifier model's judgement.
    VerifierLlm,
    /// Deterministic execution QA.
    QaCheckEffect,
    /// Computed by the engine from the transcript.
    ReducerAuto,
}

/// The deviation a verifier found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deviation {
    /// `Critical` re-plans; `Important`/`Minor` repair the build.
    #[serde(rename = "type")]
    pub kind: Severity,
}

/// Ids of the events of a judging trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CourtEval {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Id of the grader's `step.judge` event.
    pub grader_msg_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Id of the critic's `step.judge` event.
    pub critic_msg_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Id of the defender's `step.judge` event.
    pub defender_msg_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Id of the regrader's `step.judge` event.
    pub regrader_msg_id: Option<String>,
}
