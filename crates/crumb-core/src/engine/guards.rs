//! Anti-deception guards: turn a verifier's raw D1–D6 claim into the corrected scorecard the
//! routes act on.
//!
//! The verifier's own `aggregate` and `verdict` are never trusted: the aggregate is always the sum
//! of the (corrected) dimensions and the verdict is always derived from the pipeline's thresholds.
//! The optional guards of `scoring.guards` then apply ground truth from QA. Every change is named by
//! a [`Correction`], so one `audit` event can list all of them with the raw and corrected values.

use serde::Serialize;

use crate::pipeline::table::Guard;
use crate::pipeline::table::ScoringSpec;
use crate::vocab::Verdict;

/// Number of rubric dimensions (D1–D6).
pub const DIMENSIONS: usize = 6;
/// Highest score of one dimension.
pub const MAX_DIMENSION: f64 = 5.0;
/// Index of D1 (spec fit) in a dimension array.
const SPEC_FIT: usize = 0;
/// Index of D2 (execution) in a dimension array.
const EXEC: usize = 1;
/// Index of D4 (convergence) in a dimension array.
const CONVERGENCE: usize = 3;
/// Dimensions discounted when builder and verifier share a provider: D1, D3, D5.
const SELF_BIAS_DIMENSIONS: [usize; 3] = [0, 2, 4];
/// Multiplier of the same-provider discount.
const SELF_BIAS_FACTOR: f64 = 0.85;
/// D1 ceiling when an acceptance predicate failed.
const AC_FAILURE_SPEC_FIT_CAP: f64 = 2.0;
/// Scores are kept to this many decimal places so sums never land on 23.999999999999996.
const SCALE: f64 = 10_000.0;

/// What the verifier claimed, as read from a `judge.score`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RawScores {
    /// D1–D6 as sent (`None` = the dimension was absent).
    pub dimensions: [Option<f64>; DIMENSIONS],
    /// The verifier's own aggregate.
    pub aggregate: Option<f64>,
    /// The verifier's own verdict.
    pub verdict: Option<Verdict>,
}

/// The ground truth the guards consult: the latest `qa.result` and the providers involved.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    /// `data.exec_exit_code` of the latest `qa.result`; `None` when there was no QA run or no code.
    pub qa_exit_code: Option<i64>,
    /// Whether any acceptance predicate failed in that `qa.result`.
    pub ac_failed: bool,
    /// `metadata.provider` of the judging event.
    pub judge_provider: Option<&'a str>,
    /// `metadata.provider` of the latest `build`.
    pub builder_provider: Option<&'a str>,
    /// How much the session has had to redo so far.
    pub rework: Rework,
}

/// Rework counted from the transcript: what D4 (convergence) can be checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rework {
    /// Specs after the first one.
    pub respecs: u32,
    /// `build` events.
    pub builds: u32,
    /// `user.veto` events.
    pub vetoes: u32,
}

impl Rework {
    /// The highest D4 this much rework allows (the convergence rule): 5 with none;
    /// re-planning 1–2 times → 3, 3–4 → 2, 5+ → 1; rebuilding 1–2 times → at most 4, 3+ → at most 2;
    /// 3+ vetoes → at most 2.
    pub fn convergence_cap(self) -> f64 {
        let mut cap: f64 = match self.respecs {
            0 => 5.0,
            1..=2 => 3.0,
            3..=4 => 2.0,
            _ => 1.0,
        };
        match self.builds.saturating_sub(1) {
            0 => {}
            1..=2 => cap = cap.min(4.0),
            _ => cap = cap.min(2.0),
        }
        if self.vetoes >= 3 {
            cap = cap.min(2.0);
        }
        cap
    }
}

/// The scorecard the engine routes on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scorecard {
    /// D1–D6 after corrections (absent dimensions count as 0).
    pub dimensions: [f64; DIMENSIONS],
    /// Sum of `dimensions`.
    pub aggregate: f64,
    /// Derived from the thresholds and the guards.
    pub verdict: Verdict,
}

/// One correction the engine made to a verifier's claim. The wire names are stable: they appear in
/// `audit` events as `data.corrections[]` and `metadata.audit_violations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Correction {
    /// The event carried no dimensions at all.
    ScoresMissing,
    /// A dimension was outside 0–5 (or not finite) and was clamped.
    ScoreOutOfRange,
    /// D2 was replaced by the value the latest `qa.result` implies.
    ExecFromQa,
    /// D1 was capped because an acceptance predicate failed.
    AcFailureCapsSpecFit,
    /// D4 was capped to what the session's rework allows.
    ReworkCapsConvergence,
    /// D1/D3/D5 were discounted: builder and verifier share a real provider.
    SameProviderDiscount,
    /// The claimed aggregate was absent or differed from the sum of the dimensions.
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
pub fn is_real_provider(provider: Option<&str>) -> bool {
    provider.is_some_and(|p| {
        let p = p.trim();
        !p.is_empty() && !p.eq_ignore_ascii_case("none") && !p.eq_ignore_ascii_case("mock")
    })
}

/// The verdict band of an aggregate: `pass_at` and above PASS, `partial_at` and above PARTIAL, else FAIL.
pub fn verdict_for(scoring: &ScoringSpec, aggregate: f64) -> Verdict {
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

/// Apply the fixed corrections and the pipeline's guards to a raw claim.
pub fn judge(scoring: &ScoringSpec, raw: &RawScores, evidence: &Evidence<'_>) -> Judgement {
    let enabled = |guard: Guard| scoring.guards.contains(&guard);
    let mut corrections = Vec::new();
    let mut dims = [0.0; DIMENSIONS];

    if raw.dimensions.iter().all(Option::is_none) {
        corrections.push(Correction::ScoresMissing);
    }
    let mut clamped = false;
    for (slot, claimed) in dims.iter_mut().zip(raw.dimensions) {
        let value = claimed.unwrap_or(0.0);
        let bounded = if value.is_finite() {
            value.clamp(0.0, MAX_DIMENSION)
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
    // aggregate) without a passing QA run fails outright rather than sliding to PARTIAL once D2
    // is zeroed (scenario C6).
    let claimed_pass = raw.verdict == Some(Verdict::Pass)
        || verdict_for(scoring, round(dims.iter().sum())) == Verdict::Pass;
    let qa_passed = evidence.qa_exit_code == Some(0);
    if enabled(Guard::ExecFromQa) {
        let truth = if qa_passed { MAX_DIMENSION } else { 0.0 };
        if raw.dimensions[EXEC].is_none_or(|claimed| (claimed - truth).abs() > 1e-9) {
            corrections.push(Correction::ExecFromQa);
        }
        dims[EXEC] = truth;
    }
    if enabled(Guard::AcFailureCapsSpecFit)
        && evidence.ac_failed
        && dims[SPEC_FIT] > AC_FAILURE_SPEC_FIT_CAP
    {
        dims[SPEC_FIT] = AC_FAILURE_SPEC_FIT_CAP;
        corrections.push(Correction::AcFailureCapsSpecFit);
    }
    let convergence_cap = evidence.rework.convergence_cap();
    if enabled(Guard::ReworkCapsConvergence) && dims[CONVERGENCE] > convergence_cap {
        dims[CONVERGENCE] = convergence_cap;
        corrections.push(Correction::ReworkCapsConvergence);
    }
    if enabled(Guard::SameProviderDiscount)
        && is_real_provider(evidence.judge_provider)
        && is_real_provider(evidence.builder_provider)
        && evidence.judge_provider.map(str::trim) == evidence.builder_provider.map(str::trim)
    {
        for index in SELF_BIAS_DIMENSIONS {
            dims[index] = round(dims[index] * SELF_BIAS_FACTOR);
        }
        corrections.push(Correction::SameProviderDiscount);
    }

    let aggregate = round(dims.iter().sum());
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
    if enabled(Guard::PassRequiresQa)
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

    fn scoring() -> ScoringSpec {
        ScoringSpec {
            pass_at: 24.0,
            partial_at: 18.0,
            guards: vec![
                Guard::PassRequiresQa,
                Guard::ExecFromQa,
                Guard::AcFailureCapsSpecFit,
                Guard::ReworkCapsConvergence,
                Guard::SameProviderDiscount,
            ],
        }
    }

    fn claim(dims: [f64; 6], aggregate: f64, verdict: Verdict) -> RawScores {
        RawScores {
            dimensions: dims.map(Some),
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
        let scoring = ScoringSpec {
            guards: vec![Guard::PassRequiresQa],
            ..scoring()
        };
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
        let without = ScoringSpec {
            guards: vec![Guard::ExecFromQa],
            ..scoring()
        };
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
            dimensions: [
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
        let bare = ScoringSpec {
            guards: vec![],
            ..scoring()
        };
        let out = judge(
            &bare,
            &claim([5.0, 5.0, 5.0, 5.0, 5.0, 5.0], 30.0, Verdict::Pass),
            &Evidence::default(),
        );
        assert_eq!(out.corrected.verdict, Verdict::Pass);
        assert_eq!(out.corrections, vec![]);
    }
}
