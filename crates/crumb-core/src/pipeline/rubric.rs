//! The declared rubric: the dimensions a judge scores, where each score comes from and which
//! guard touches which dimension. The engine knows no dimension by name; it works from the
//! compiled [`DimensionSpec`] list only.
//!
//! A pipeline without `scoring.rubric` gets `default_rubric` (the D1–D6 of casual game work),
//! kept here as data so the engine stays free of it; the listed `scoring.guards` then decide which
//! of its dimension properties apply. A declared rubric must be consistent with the guards: every
//! property a dimension declares needs its guard listed, and every listed dimension guard needs a
//! dimension that declares its property — nothing is accepted and then ignored.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pipeline::choices::Guard;

/// Ids a judge can send as top-level keys of `scores` (the transcript format's fixed slots,
/// each 0–5). Any other declared id is read from `scores.dims`.
pub use crate::transcript::scores::SLOT_IDS;
/// Highest scale of a dimension stored in one of the [`SLOT_IDS`].
pub(crate) const SLOT_MAX: f64 = 5.0;

/// One rubric dimension as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DimensionDecl {
    /// The key the judge scores it under: `D1`–`D6` are top-level keys of `scores` (0–5); any
    /// other id (letters, digits, `_`, `-`) goes under `scores.dims`.
    pub id: String,
    /// What the dimension measures, as Studio and `crumb status` show it.
    pub label: String,
    /// Highest score (the lowest is 0). Default 5.
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// Multiplier of the score in the aggregate. Default 1.
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// Where the score comes from. Default `judge`.
    #[serde(default)]
    pub source: DimensionSource,
    /// Ceiling of the score when an acceptance predicate failed (guard `ac_failure_caps_spec_fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ac_failure_cap: Option<f64>,
    /// Multiplier applied when judge and builder share a real provider (guard
    /// `same_provider_discount`), e.g. 0.85.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) same_provider_discount: Option<f64>,
}

fn default_scale() -> f64 {
    5.0
}
fn default_weight() -> f64 {
    1.0
}

/// Where a dimension's score comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DimensionSource {
    /// The judge's claim (clamped to the scale).
    #[default]
    Judge,
    /// The latest QA run: the full scale when it passed, else 0, whatever the judge said (guard
    /// `exec_from_qa`).
    Qa,
    /// A rule over the session's history: the judge's claim, capped by how much the session had to
    /// redo (re-plans, rebuilds, vetoes; guard `rework_caps_convergence`).
    Rework,
}

impl DimensionSource {
    /// The wire name, as the rubric and the status JSON carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            DimensionSource::Judge => "judge",
            DimensionSource::Qa => "qa",
            DimensionSource::Rework => "rework",
        }
    }
}

/// One dimension, compiled: what the engine scores by. Index = position in the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionSpec {
    pub id: String,
    pub label: String,
    pub scale: f64,
    pub weight: f64,
    pub source: DimensionSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ac_failure_cap: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) same_provider_discount: Option<f64>,
}

impl DimensionSpec {
    /// Highest weighted contribution to the aggregate.
    pub(crate) fn max_points(&self) -> f64 {
        self.scale * self.weight
    }
}

/// The rubric of a pipeline that declares none: D1–D6, each 0–5 with weight 1 (out of 30).
pub(crate) fn default_rubric() -> Vec<DimensionDecl> {
    let dim = |id: &str, label: &str| DimensionDecl {
        id: id.to_owned(),
        label: label.to_owned(),
        scale: default_scale(),
        weight: default_weight(),
        source: DimensionSource::Judge,
        ac_failure_cap: None,
        same_provider_discount: None,
    };
    vec![
        DimensionDecl {
            ac_failure_cap: Some(2.0),
            same_provider_discount: Some(0.85),
            ..dim("D1", "Spec fit")
        },
        DimensionDecl {
            source: DimensionSource::Qa,
            ..dim("D2", "Execution")
        },
        DimensionDecl {
            same_provider_discount: Some(0.85),
            ..dim("D3", "Observability")
        },
        DimensionDecl {
            source: DimensionSource::Rework,
            ..dim("D4", "Convergence")
        },
        DimensionDecl {
            same_provider_discount: Some(0.85),
            ..dim("D5", "Intervention")
        },
        dim("D6", "Portability"),
    ]
}

/// The guard that switches a dimension property on, for each property a dimension can declare.
pub(crate) fn property_guards(decl: &DimensionDecl) -> Vec<(Guard, &'static str)> {
    let mut out = Vec::new();
    match decl.source {
        DimensionSource::Judge => {}
        DimensionSource::Qa => out.push((Guard::ExecFromQa, "source")),
        DimensionSource::Rework => out.push((Guard::ReworkCapsConvergence, "source")),
    }
    if decl.ac_failure_cap.is_some() {
        out.push((Guard::AcFailureCapsSpecFit, "ac_failure_cap"));
    }
    if decl.same_provider_discount.is_some() {
        out.push((Guard::SameProviderDiscount, "same_provider_discount"));
    }
    out
}

/// Compile a rubric. With the default rubric (`declared` false), properties whose guard is not
/// listed are dropped, so `guards:` alone still selects what applies.
pub fn compile(decls: &[DimensionDecl], guards: &[Guard], declared: bool) -> Vec<DimensionSpec> {
    decls
        .iter()
        .map(|d| {
            let on = |guard: Guard| declared || guards.contains(&guard);
            let source = match d.source {
                DimensionSource::Qa if !on(Guard::ExecFromQa) => DimensionSource::Judge,
                DimensionSource::Rework if !on(Guard::ReworkCapsConvergence) => {
                    DimensionSource::Judge
                }
                other => other,
            };
            DimensionSpec {
                id: d.id.clone(),
                label: d.label.clone(),
                scale: d.scale,
                weight: d.weight,
                source,
                ac_failure_cap: d.ac_failure_cap.filter(|_| on(Guard::AcFailureCapsSpecFit)),
                same_provider_discount: d
                    .same_provider_discount
                    .filter(|_| on(Guard::SameProviderDiscount)),
            }
        })
        .collect()
}

/// The table's rubric for a pipeline's `scoring.rubric` under `guards` (what applies, see
/// `Scoring::guards_for` in the model): the declared one, else the default.
pub fn lower(declared: Option<&[DimensionDecl]>, guards: &[Guard]) -> Vec<DimensionSpec> {
    match declared {
        Some(declared) => compile(declared, guards, true),
        None => compile(&default_rubric(), guards, false),
    }
}

/// Whether a guard acts on dimensions (and so needs a dimension that declares its property).
pub(crate) fn is_dimension_guard(guard: Guard) -> bool {
    !matches!(guard, Guard::PassRequiresQa)
}

/// The rubric as templates see it (`pipeline.rubric`): id, label, scale, weight, source.
pub fn template_value(rubric: &[DimensionSpec]) -> serde_json::Value {
    rubric
        .iter()
        .map(|d| {
            serde_json::json!({
                "id": d.id, "label": d.label, "scale": d.scale,
                "weight": d.weight, "source": d.source.as_str(),
            })
        })
        .collect()
}

/// Highest aggregate of a compiled rubric.
pub fn max_aggregate(rubric: &[DimensionSpec]) -> f64 {
    rubric.iter().map(DimensionSpec::max_points).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_rubric_sums_to_thirty_and_follows_the_guards() {
        let all = compile(&default_rubric(), &[], false);
        assert!((max_aggregate(&all) - 30.0).abs() < 1e-9);
        assert!(all.iter().all(|d| d.source == DimensionSource::Judge
            && d.ac_failure_cap.is_none()
            && d.same_provider_discount.is_none()));
        let exec = compile(&default_rubric(), &[Guard::ExecFromQa], false);
        assert_eq!(exec[1].source, DimensionSource::Qa);
        assert_eq!(exec[3].source, DimensionSource::Judge);
    }

    #[test]
    fn a_declared_rubric_keeps_its_properties() {
        let out = compile(&default_rubric(), &[], true);
        assert_eq!(out[3].source, DimensionSource::Rework);
        assert_eq!(out[0].ac_failure_cap, Some(2.0));
    }
}
