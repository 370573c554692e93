//! Anti-deception guards: turn a verifier's raw claim over the pipeline's rubric into the
//! corrected scorecard the routes act on.
//!
//! The verifier's own `aggregate` and `verdict` are never trusted: the aggregate is always the
//! weighted sum of the (corrected) dimensions and the verdict is always derived from the
//! pipeline's thresholds. The optional guards of `scoring.guards` then apply ground truth from QA
//! and the session's history to the dimensions that declare them. Every change is named by a
//! [`Correction`], so one `audit` event can list all of them with the raw and corrected values.
//! No dimension is known here by name or position: the rubric is the table's.

use serde::{Deserialize, Serialize};

use crate::pipeline::choices::Guard;
use crate::pipeline::rubric::{DimensionSource, DimensionSpec};
use crate::pipeline::table::ScoringSpec;
use crate::vocab::Verdict;

/// Scores are kept to this many decimal places so sums never land on 23.999999999999996.
const SCALE: f64 = 10_000.0;

/// What the verifier claimed, as read from a `judge.score`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawScores {
    /// One per rubric dimension, in rubric order, as sent (`None` = the dimension was absent).
    pub dimensions: Vec<Option<f64>>,
    /// The verifier's own aggregate.
    pub aggregate: Option<f64>,
    /// The verifier's own verdict.
    pub verdict: Option<Verdict>,
}

/// The ground truth the guards consult: the latest `qa.result` and the providers involved.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    /// `data.exec_exit_code` of the latest `qa.result`; `None` when there was no QA run or no code.
    pub(crate) qa_exit_code: Option<i64>,
    /// Whether any acceptance predicate failed in that `qa.result`.
    pub ac_failed: bool,
    /// `metadata.provider` of the judging event.
    pub(crate) judge_provider: Option<&'a str>,
    /// `metadata.provider` of the latest build.
    pub(crate) builder_provider: Option<&'a str>,
    /// How much the session has had to redo so far.
    pub rework: Rework,
}

/// Rework counted from the transcript: what a `source: rework` dimension is checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rework {
    /// Re-plans (the declared re-plan counter).
    pub respecs: u32,
    /// Builds (the declared build counter).
    pub builds: u32,
    /// `user.veto` events.
    pub(crate) vetoes: u32,
}

impl Rework {
    /// The highest share of the scale this much rework allows (the convergence rule): all of it
    /// with none; re-planning 1–2 times → 3/5, 3–4 → 2/5, 5+ → 1/5; rebuilding 1–2 times → at
    /// most 4/5, 3+ → at most 2/5; 3+ vetoes → at most 2/5.
    pub(crate) fn convergence_share(self) -> f64 {
        let mut share: f64 = match self.respecs {
            0 => 1.0,
            1..=2 => 0.6,
            3..=4 => 0.4,
            _ => 0.2,
        };
        match self.builds.saturating_sub(1) {
            0 => {}
            1..=2 => share = share.min(0.8),
            _ => share = share.min(0.4),
        }
        if self.vetoes >= 3 {
            share = share.min(0.4);
        }
        share
    }
}

/// The scorecard the engine routes on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scorecard {
    /// One per rubric dimension after corrections (absent dimensions count as 0).
    pub dimensions: Vec<f64>,
    /// Σ weight × dimension.
    pub aggregate: f64,
    /// Derived from the thresholds and the guards.
    pub verdict: Verdict,
}

/// One correction the engine made to a verifier's claim. The wire names are stable: they appear in
/// `audit` events as `data.corrections[]` and `metadata.audit_violations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Correction {
    /// The event carried no dimensions at all.
    ScoresMissing,
    /// A dimension was outside its scale (or not finite) and was clamped.
    ScoreOutOfRange,
    /// A `source: qa` dimension was replaced by the value the latest `qa.result` implies.
    ExecFromQa,
    /// A dimension with `ac_failure_cap` was capped because an acceptance predicate failed.
    AcFailureCapsSpecFit,
    /// A `source: rework` dimension was capped to what the session's rework allows.
    ReworkCapsConvergence,
    /// Dimensions with `same_provider_discount` were discounted: builder and verifier share a
    /// real provider.
    SameProviderDiscount,
    /// The claimed aggregate was absent or differed from the weighted sum of the dimensions.
    AggregateRecomputed,
    /// The claimed verdict was absent or disagreed with the thresholds.
    VerdictFromThresholds,
    /// A PASS without a successful QA run became FAIL.
    PassRequiresQa,
}

impl Correction {
    /// The wire name, e.g. `exec_from_qa`.
    pub fn as_str(self) -> &'static str {
        match self {
            Correction::ScoresMissing => "scores_missing",
            Correction::ScoreOutOfRange => "score_out_of_range",
            Correction::ExecFromQa => "exec_from_qa",
            Correction::AcFailureCapsSpecFit => "ac_failure_caps_spec_fit",
            Correction::ReworkCapsConvergence => "rework_caps_convergence",
            Correction::SameProviderDiscount => "same_provider_discount",
            Correction::AggregateRecomputed => "aggregate_recomputed",
            Correction::VerdictFromThresholds => "verdict_from_thresholds",
            Correction::PassRequiresQa => "pass_requires_qa",
        }
    }
}

/// The guards' answer: the corrected scorecard and what was changed to get there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    pub corrected: Scorecard,
    /// In the order the guards ran; empty when the claim stood as sent.
    pub corrections: Vec<Correction>,
}

/// Whether a provider name identifies a real model vendor (not `none`, `mock`, empty or absent).
pub(crate) fn is_real_provider(provider: Option<&str>) -> bool {
    provider.is_some_and(|p| {
        let p = p.trim();
        !p.is_empty() && !p.eq_ignore_ascii_case("none") && !p.eq_ignore_ascii_case("mock")
    })
}

/// The verdict band of an aggregate: `pass_at` and above PASS, `partial_at` and above PARTIAL, else FAIL.
pub(crate) fn verdict_for(scoring: &ScoringSpec, aggregate: f64) -> Verdict {
    if aggregate >= scoring.pass_at {
        Verdict::Pass
    } else if aggregate >= scoring.partial_at {
        Verdict::Partial
    } else {
        Verdict::Fail
    }
}

fn round(value: f64) -> f64 {
    (value * SCALE).round() / SCALE
}

/// Σ weight × score over the rubric.
fn weighted(rubric: &[DimensionSpec], dims: &[f64]) -> f64 {
    round(rubric.iter().zip(dims).map(|(d, v)| d.weight * v).sum())
}

/// The guards that act on the dimensions declaring them: QA's verdict for `source: qa`, the
/// acceptance-failure cap, the rework cap for `source: rework`, and the same-provider discount.
fn ground_truth(
    rubric: &[DimensionSpec],
    raw: &RawScores,
    evidence: &Evidence<'_>,
    dims: &mut [f64],
    corrections: &mut Vec<Correction>,
) {
    let claimed = |i: usize| raw.dimensions.get(i).copied().flatten();
    let qa_passed = evidence.qa_exit_code == Some(0);
    let mut from_qa = false;
    for (i, spec) in rubric.iter().enumerate() {
        if spec.source != DimensionSource::Qa {
            continue;
        }
        let truth = if qa_passed { spec.scale } else { 0.0 };
        from_qa |= claimed(i).is_none_or(|c| (c - truth).abs() > 1e-9);
        dims[i] = truth;
    }
    if from_qa {
        corrections.push(Correction::ExecFromQa);
    }
    let mut capped = false;
    for (i, spec) in rubric.iter().enumerate() {
        if let Some(cap) = spec.ac_failure_cap
            && evidence.ac_failed
            && dims[i] > cap
        {
            dims[i] = cap;
            capped = true;
        }
    }
    if capped {
        corrections.push(Correction::AcFailureCapsSpecFit);
    }
    let share = evidence.rework.convergence_share();
    let mut converged = false;
    for (i, spec) in rubric.iter().enumerate() {
        let cap = round(spec.scale * share);
        if spec.source == DimensionSource::Rework && dims[i] > cap {
            dims[i] = cap;
            converged = true;
        }
    }
    if converged {
        corrections.push(Correction::ReworkCapsConvergence);
    }
    let same_provider = is_real_provider(evidence.judge_provider)
        && is_real_provider(evidence.builder_provider)
        && evidence.judge_provider.map(str::trim) == evidence.builder_provider.map(str::trim);
    let discounted: Vec<(usize, f64)> = rubric
        .iter()
        .enumerate()
        .filter_map(|(i, spec)| spec.same_provider_discount.map(|f| (i, f)))
        .collect();
    if same_provider && !discounted.is_empty() {
        for (i, factor) in discounted {
            dims[i] = round(dims[i] * factor);
        }
        corrections.push(Correction::SameProviderDiscount);
    }
}

/// Apply the fixed corrections and the pipeline's guards to a raw claim.
pub fn judge(scoring: &ScoringSpec, raw: &RawScores, evidence: &Evidence<'_>) -> Judgement {
    let rubric = &scoring.rubric;
    let claimed = |i: usize| raw.dimensions.get(i).copied().flatten();
    let mut corrections = Vec::new();
    let mut dims = vec![0.0; rubric.len()];

    if (0..rubric.len()).all(|i| claimed(i).is_none()) {
        corrections.push(Correction::ScoresMissing);
    }
    let mut clamped = false;
    for (i, (slot, spec)) in dims.iter_mut().zip(rubric).enumerate() {
        let value = claimed(i).unwrap_or(0.0);
        let bounded = if value.is_finite() {
            value.clamp(0.0, spec.scale)
        } else {
            0.0
        };
        clamped |= value.is_nan() || (bounded - value).abs() > f64::EPSILON;
        *slot = round(bounded);
    }
    if clamped {
        corrections.push(Correction::ScoreOutOfRange);
    }

    // What the claim amounted to before the QA-based guards: a PASS claim (or a pass-band
    // aggregate) without a passing QA run fails outright rather than sliding to PARTIAL once a
    // QA dimension is zeroed (scenario C6).
    let claimed_pass = raw.verdict == Some(Verdict::Pass)
        || verdict_for(scoring, weighted(rubric, &dims)) == Verdict::Pass;
    let qa_passed = evidence.qa_exit_code == Some(0);
    ground_truth(rubric, raw, evidence, &mut dims, &mut corrections);

    let aggregate = weighted(rubric, &dims);
    if raw
        .aggregate
        .is_none_or(|claimed| (claimed - aggregate).abs() > 1e-9)
    {
        corrections.push(Correction::AggregateRecomputed);
    }

    let mut verdict = verdict_for(scoring, aggregate);
    // REJECT is the verifier's stronger FAIL; keep the word when the band agrees it failed.
    if verdict == Verdict::Fail && raw.verdict == Some(Verdict::Reject) {
        verdict = Verdict::Reject;
    }
    if raw.verdict != Some(verdict) {
        corrections.push(Correction::VerdictFromThresholds);
    }
    if scoring.guards.contains(&Guard::PassRequiresQa)
        && (verdict == Verdict::Pass || (claimed_pass && verdict == Verdict::Partial))
        && !qa_passed
    {
        verdict = Verdict::Fail;
        corrections.push(Correction::PassRequiresQa);
    }

    Judgement {
        corrected: Scorecard {
            dimensions: dims,
            aggregate,
            verdict,
        },
        corrections,
    }
}

#[cfg(test)]
#[allow(
    clippy::float_cmp,
    reason = "scores are rounded to 4 decimals, so exact comparison is the point"
)]
mod tests {
    use super::*;
    use crate::pipeline::rubric;

    fn with_guards(guards: Vec<Guard>) -> ScoringSpec {
        ScoringSpec {
            rubric: rubric::compile(&rubric::default_rubric(), &guards, false),
            pass_at: 24.0,
            partial_at: 18.0,
            guards,
        }
    }

    fn scoring() -> ScoringSpec {
        with_guards(vec![
            Guard::PassRequiresQa,
            Guard::ExecFromQa,
            Guard::AcFailureCapsSpecFit,
            Guard::ReworkCapsConvergence,
            Guard::SameProviderDiscount,
        ])
    }

    fn claim(dims: [f64; 6], aggregate: f64, verdict: Verdict) -> RawScores {
        RawScores {
            dimensions: dims.map(Some).to_vec(),
            aggregate: Some(aggregate),
            verdict: Some(verdict),
        }
    }

    fn qa_ok() -> Evidence<'static> {
        Evidence {
            qa_exit_code: Some(0),
            ..Evidence::default()
        }
    }

    #[test]
    fn an_honest_pass_stands_without_corrections() {
        let out = judge(
            &scoring(),
            &claim([5.0, 5.0, 4.0, 5.0, 4.0, 4.0], 27.0, Verdict::Pass),
            &qa_ok(),
        );
        assert_eq!(out.corrections, vec![]);
        assert_eq!(out.corrected.verdict, Verdict::Pass);
        assert!((out.corrected.aggregate - 27.0).abs() < 1e-9);
    }

    #[test]
    fn pass_without_qa_becomes_fail_and_exec_is_zeroed() {
        let out = judge(
            &scoring(),
            &claim([4.0, 5.0, 4.0, 5.0, 4.0, 4.0], 26.0, Verdict::Pass),
            &Evidence::default(),
        );
        assert_eq!(out.corrected.dimensions[1], 0.0);
        assert!((out.corrected.aggregate - 21.0).abs() < 1e-9);
        // 21 is PARTIAL by the thresholds, but the claim was a PASS with no QA run: FAIL (C6).
        assert_eq!(out.corrected.verdict, Verdict::Fail);
        assert!(out.corrections.contains(&Correction::PassRequiresQa));
        assert!(out.corrections.contains(&Correction::ExecFromQa));
        assert!(out.corrections.contains(&Correction::VerdictFromThresholds));
    }

    #[test]
    fn pass_band_without_successful_qa_is_failed() {
        let dims = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0];
        let scoring = with_guards(vec![Guard::PassRequiresQa]);
        let failed_qa = Evidence {
            qa_exit_code: Some(1),
            ..Evidence::default()
        };
        let out = judge(&scoring, &claim(dims, 30.0, Verdict::Pass), &failed_qa);
        assert_eq!(out.corrected.verdict, Verdict::Fail);
        assert_eq!(out.corrections, vec![Correction::PassRequiresQa]);
    }

    #[test]
    fn the_verdict_always_follows_the_thresholds() {
        let out = judge(
            &scoring(),
            &claim([2.0, 5.0, 1.0, 1.0, 1.0, 0.0], 10.0, Verdict::Pass),
            &qa_ok(),
        );
        assert_eq!(out.corrected.verdict, Verdict::Fail);
        assert_eq!(out.corrections, vec![Correction::VerdictFromThresholds]);
        let lied = judge(
            &scoring(),
            &claim([5.0, 5.0, 5.0, 5.0, 5.0, 5.0], 12.0, Verdict::Pass),
            &qa_ok(),
        );
        assert_eq!(lied.corrections, vec![Correction::AggregateRecomputed]);
        assert_eq!(lied.corrected.verdict, Verdict::Pass);
    }

    #[test]
    fn reject_is_kept_in_the_fail_band() {
        let out = judge(
            &scoring(),
            &claim([1.0, 5.0, 1.0, 1.0, 1.0, 1.0], 10.0, Verdict::Reject),
            &qa_ok(),
        );
        assert_eq!(out.corrected.verdict, Verdict::Reject);
        assert_eq!(out.corrections, vec![]);
    }

    /// A REJECT claim outside the FAIL band takes the band's verdict: REJECT is never derived
    /// from thresholds, only kept where they agree the work failed.
    #[test]
    fn reject_outside_the_fail_band_takes_the_bands_verdict() {
        let out = judge(
            &scoring(),
            &claim([4.0, 5.0, 4.0, 4.0, 3.0, 3.0], 23.0, Verdict::Reject),
            &qa_ok(),
        );
        assert_eq!(out.corrected.verdict, Verdict::Partial);
        assert!(
            out.corrections.contains(&Correction::VerdictFromThresholds),
            "{:?}",
            out.corrections
        );
    }

    #[test]
    fn exec_comes_from_qa_never_from_the_model() {
        let failed_qa = Evidence {
            qa_exit_code: Some(3),
            ..Evidence::default()
        };
        let out = judge(
            &scoring(),
            &claim([5.0, 5.0, 5.0, 5.0, 5.0, 5.0], 30.0, Verdict::Pass),
            &failed_qa,
        );
        assert_eq!(out.corrected.dimensions[1], 0.0);
        assert_eq!(out.corrected.verdict, Verdict::Fail);
        assert_eq!(
            out.corrections,
            vec![
                Correction::ExecFromQa,
                Correction::AggregateRecomputed,
                Correction::PassRequiresQa
            ]
        );
        let modest = judge(
            &scoring(),
            &claim([4.0, 0.0, 4.0, 4.0, 4.0, 4.0], 20.0, Verdict::Partial),
            &qa_ok(),
        );
        assert_eq!(modest.corrected.dimensions[1], 5.0);
        assert!(modest.corrections.contains(&Correction::ExecFromQa));
    }

    #[test]
    fn rework_caps_convergence_never_raises_it() {
        let evidence = |respecs, builds, vetoes| Evidence {
            qa_exit_code: Some(0),
            rework: Rework {
                respecs,
                builds,
                vetoes,
            },
            ..Evidence::default()
        };
        let claimed = claim([5.0, 5.0, 5.0, 5.0, 5.0, 5.0], 30.0, Verdict::Pass);
        for (respecs, builds, vetoes, d4) in [
            (0, 1, 0, 5.0),
            (0, 2, 0, 4.0),
            (0, 4, 0, 2.0),
            (1, 1, 0, 3.0),
            (3, 1, 0, 2.0),
            (5, 9, 3, 1.0),
            (0, 1, 3, 2.0),
        ] {
            let out = judge(&scoring(), &claimed, &evidence(respecs, builds, vetoes));
            assert_eq!(
                out.corrected.dimensions[3], d4,
                "{respecs} {builds} {vetoes}"
            );
            assert_eq!(
                out.corrections.contains(&Correction::ReworkCapsConvergence),
                d4 < 5.0
            );
        }
        // A lower claim stands: the cap is a ceiling, not the score.
        let modest = claim([5.0, 5.0, 5.0, 1.0, 5.0, 5.0], 26.0, Verdict::Pass);
        let out = judge(&scoring(), &modest, &evidence(1, 3, 0));
        assert_eq!(out.corrected.dimensions[3], 1.0);
        assert!(out.corrections.is_empty());
        // Not declared, not applied.
        let without = with_guards(vec![Guard::ExecFromQa]);
        let out = judge(&without, &claimed, &evidence(5, 9, 3));
        assert_eq!(out.corrected.dimensions[3], 5.0);
    }

    #[test]
    fn an_ac_failure_caps_spec_fit() {
        let evidence = Evidence {
            qa_exit_code: Some(0),
            ac_failed: true,
            ..Evidence::default()
        };
        let out = judge(
            &scoring(),
            &claim([5.0, 5.0, 5.0, 5.0, 5.0, 5.0], 30.0, Verdict::Pass),
            &evidence,
        );
        assert_eq!(out.corrected.dimensions[0], 2.0);
        assert!((out.corrected.aggregate - 27.0).abs() < 1e-9);
        assert!(out.corrections.contains(&Correction::AcFailureCapsSpecFit));
    }

    #[test]
    fn same_provider_discount_only_between_real_providers() {
        let dims = [5.0, 5.0, 4.0, 5.0, 4.0, 5.0];
        for fake in ["none", "mock", "", "NONE"] {
            let evidence = Evidence {
                qa_exit_code: Some(0),
                judge_provider: Some(fake),
                builder_provider: Some(fake),
                ..Evidence::default()
            };
            assert_eq!(
                judge(&scoring(), &claim(dims, 28.0, Verdict::Pass), &evidence).corrections,
                vec![],
                "{fake}"
            );
        }
        let absent = Evidence {
            qa_exit_code: Some(0),
            ..Evidence::default()
        };
        assert_eq!(
            judge(&scoring(), &claim(dims, 28.0, Verdict::Pass), &absent).corrections,
            vec![]
        );
        let different = Evidence {
            qa_exit_code: Some(0),
            judge_provider: Some("openai"),
            builder_provider: Some("anthropic"),
            ..Evidence::default()
        };
        assert_eq!(
            judge(&scoring(), &claim(dims, 28.0, Verdict::Pass), &different).corrections,
            vec![]
        );
        let same = Evidence {
            qa_exit_code: Some(0),
            judge_provider: Some("anthropic"),
            builder_provider: Some("anthropic"),
            ..Evidence::default()
        };
        let out = judge(&scoring(), &claim(dims, 28.0, Verdict::Pass), &same);
        assert_eq!(out.corrected.dimensions, [4.25, 5.0, 3.4, 5.0, 3.4, 5.0]);
        assert!((out.corrected.aggregate - 26.05).abs() < 1e-9);
        assert_eq!(
            out.corrections,
            vec![
                Correction::SameProviderDiscount,
                Correction::AggregateRecomputed
            ]
        );
    }

    #[test]
    fn missing_and_out_of_range_scores_are_named() {
        let none = judge(&scoring(), &RawScores::default(), &qa_ok());
        assert_eq!(none.corrected.verdict, Verdict::Fail);
        assert!(none.corrections.contains(&Correction::ScoresMissing));
        let wild = RawScores {
            dimensions: vec![
                Some(9.0),
                Some(5.0),
                Some(-3.0),
                Some(f64::NAN),
                Some(f64::INFINITY),
                Some(5.0),
            ],
            aggregate: None,
            verdict: None,
        };
        let out = judge(&scoring(), &wild, &qa_ok());
        assert_eq!(out.corrected.dimensions, [5.0, 5.0, 0.0, 0.0, 0.0, 5.0]);
        assert!(out.corrections.contains(&Correction::ScoreOutOfRange));
    }

    #[test]
    fn guards_not_declared_do_not_run() {
        let bare = with_guards(vec![]);
        let out = judge(
            &bare,
            &claim([5.0, 5.0, 5.0, 5.0, 5.0, 5.0], 30.0, Verdict::Pass),
            &Evidence::default(),
        );
        assert_eq!(out.corrected.verdict, Verdict::Pass);
        assert_eq!(out.corrections, vec![]);
    }

    #[test]
    fn a_declared_rubric_is_weighted_scaled_and_guarded_by_its_own_properties() {
        use crate::pipeline::rubric::{DimensionDecl, DimensionSource};
        let decl = |id: &str, scale: f64, weight: f64, source| DimensionDecl {
            id: id.into(),
            label: id.into(),
            scale,
            weight,
            source,
            ac_failure_cap: None,
            same_provider_discount: None,
        };
        let declared = vec![
            decl("accuracy", 10.0, 2.0, DimensionSource::Judge),
            decl("runs", 1.0, 3.0, DimensionSource::Qa),
        ];
        let guards = vec![Guard::ExecFromQa];
        let scoring = ScoringSpec {
            rubric: rubric::compile(&declared, &guards, true),
            pass_at: 20.0,
            partial_at: 10.0,
            guards,
        };
        let raw = RawScores {
            dimensions: vec![Some(12.0), Some(0.0)],
            aggregate: Some(23.0),
            verdict: Some(Verdict::Pass),
        };
        let out = judge(&scoring, &raw, &qa_ok());
        // 12 is clamped to the scale 10; `runs` comes from QA (1); 2 × 10 + 3 × 1 = 23.
        assert_eq!(out.corrected.dimensions, [10.0, 1.0]);
        assert_eq!(out.corrected.aggregate, 23.0);
        assert_eq!(out.corrected.verdict, Verdict::Pass);
        assert_eq!(
            out.corrections,
            vec![Correction::ScoreOutOfRange, Correction::ExecFromQa]
        );
    }
}
