//! The closed sets of words a pipeline file chooses from that the compiled table keeps as they
//! are: the guards, how a join fires and combines, what an open circuit does. Both the file's
//! model and the table use them, so they live apart from both.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An anti-deception guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// A PASS without a successful QA run becomes FAIL.
    PassRequiresQa,
    /// Dimensions with `source: qa` always come from the latest `qa.result`, never from the
    /// model (D2, execution, in the default rubric).
    ExecFromQa,
    /// A failed acceptance predicate caps the dimensions that declare `ac_failure_cap` (D1 at 2
    /// in the default rubric).
    AcFailureCapsSpecFit,
    /// Dimensions with `source: rework` can be no higher than the session's own rework allows:
    /// re-plans, rebuilds and vetoes counted from the transcript lower their ceiling (D4).
    ReworkCapsConvergence,
    /// When verifier and builder share a real provider, the dimensions that declare
    /// `same_provider_discount` are multiplied by it (D1/D3/D5 × 0.85 in the default rubric).
    SameProviderDiscount,
}

impl Guard {
    /// Whether the guard acts on a QA run's evidence (a pass, the exit code, the acceptance
    /// predicates), so that without `qa:` it could only fail verdicts or do nothing.
    pub(crate) fn needs_qa(self) -> bool {
        matches!(
            self,
            Guard::PassRequiresQa | Guard::ExecFromQa | Guard::AcFailureCapsSpecFit
        )
    }
}

/// When a join fires: `all`, `any` or `{ quorum: n }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum JoinMode {
    /// `all` (once every branch reported) or `any` (on the first).
    Word(JoinWord),
    /// Once this many branches reported.
    Quorum(Quorum),
}

/// The word forms of a join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JoinWord {
    /// Once every branch reported.
    All,
    /// On the first branch that reports.
    Any,
}

/// `{ quorum: n }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Quorum {
    /// How many branches must have reported.
    pub(crate) quorum: u32,
}

impl JoinMode {
    /// How many results fire the join, out of `branches`.
    pub fn needed(self, branches: usize) -> usize {
        match self {
            JoinMode::Word(JoinWord::All) => branches,
            JoinMode::Word(JoinWord::Any) => 1,
            JoinMode::Quorum(Quorum { quorum }) => {
                usize::try_from(quorum).unwrap_or(usize::MAX).min(branches)
            }
        }
    }
}

/// How a join combines its branches' corrected verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    /// PASS only when every branch passed; else the worst branch verdict.
    AllPass,
    /// PASS when more than half passed; PARTIAL when more than half passed or were partial;
    /// else FAIL.
    Majority,
    /// The mean of the aggregates, banded by the thresholds.
    Mean,
    /// The lowest aggregate, banded by the thresholds.
    Min,
}

/// What happens when a circuit opens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CircuitAction {
    /// Swap to the role's next fallback adapter, in declared order, one per opening; when the
    /// list is exhausted, stop with `circuit_open:<role>`.
    #[default]
    Swap,
    /// Stop with `circuit_open:<role>` straight away.
    Stop,
}
