//! The dimensions a scorecard is drawn from, as `[{id, label, scale, weight, source}]`: the one
//! place Studio learns them. Today every pipeline is scored on the D1–D6 rubric; when pipelines
//! declare their own (issue 12), only [`rubric`] changes to read the table's list.

use serde::Serialize;

use crate::pipeline::table::TransitionTable;

/// One scored dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dimension {
    pub id: &'static str,
    pub label: &'static str,
    /// Highest score of the dimension.
    pub scale: f64,
    /// Weight in the aggregate.
    pub weight: f64,
    /// Who scores it by default: `model`, `qa` or `engine`.
    pub source: &'static str,
}

const fn dim(id: &'static str, label: &'static str, source: &'static str) -> Dimension {
    Dimension {
        id,
        label,
        scale: 5.0,
        weight: 1.0,
        source,
    }
}

/// D1–D6 as people read them.
const D1_D6: [Dimension; 6] = [
    dim("D1", "Spec fit", "model"),
    dim("D2", "Execution", "qa"),
    dim("D3", "Observability", "model"),
    dim("D4", "Convergence", "engine"),
    dim("D5", "Intervention", "model"),
    dim("D6", "Portability", "model"),
];

/// The rubric a session's scorecard is drawn with.
pub fn rubric(_table: Option<&TransitionTable>) -> Vec<Dimension> {
    D1_D6.to_vec()
}

/// The label of dimension `id`, else the id itself.
pub fn label(rubric: &[Dimension], id: &str) -> String {
    rubric
        .iter()
        .find(|d| d.id.eq_ignore_ascii_case(id))
        .map_or_else(|| id.to_owned(), |d| d.label.to_owned())
}
