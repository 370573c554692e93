//! The dimensions a scorecard is drawn from, as `[{id, label, scale, weight, source}]`: the one
//! place Studio learns them, from the pipeline's declared rubric in the compiled table.

use serde::Serialize;

use crate::pipeline::table::TransitionTable;

/// One scored dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Dimension {
    pub id: String,
    pub label: String,
    /// Highest score of the dimension.
    pub scale: f64,
    /// Weight in the aggregate.
    pub weight: f64,
    /// Where the pipeline says the score comes from: `judge`, `qa` or `rework`.
    pub source: &'static str,
}

/// The rubric a session's scorecard is drawn with (none when the pipeline cannot be read).
pub(crate) fn rubric(table: Option<&TransitionTable>) -> Vec<Dimension> {
    table.map_or_else(Vec::new, |table| {
        table
            .scoring
            .rubric
            .iter()
            .map(|spec| Dimension {
                id: spec.id.clone(),
                label: spec.label.clone(),
                scale: spec.scale,
                weight: spec.weight,
                source: spec.source.as_str(),
            })
            .collect()
    })
}
