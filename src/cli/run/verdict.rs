//! The verdict lines of `crumb run`'s summary (and its `--json`): the verdict the routes acted
//! on, which after a `join:` is the combined one, shown with each branch's.

use crate::fs::stdout::outln;
use serde_json::{Value, json};

/// The verdict the routes last acted on: a join's combined verdict with each branch's, else the
/// latest judge's raw and corrected verdict.
pub(super) fn verdict_json(state: &crate::engine::state::State) -> Value {
    if let Some(joined) = &state.verification.routed_join {
        let branches: Vec<Value> = joined
            .branches
            .iter()
            .map(|b| {
                json!({"role": b.role, "verdict": b.verdict, "severity": b.severity, "aggregate": b.aggregate})
            })
            .collect();
        return json!({
            "joined": true,
            "combine": joined.combine,
            "corrected": { "verdict": joined.verdict, "aggregate": joined.aggregate },
            "severity": joined.severity,
            "branches": branches,
        });
    }
    state.verification.latest.as_ref().map_or(Value::Null, |v| {
        json!({
            "raw": { "verdict": v.raw.verdict, "aggregate": v.raw.aggregate },
            "corrected": { "verdict": v.corrected.verdict, "aggregate": v.corrected.aggregate },
            "corrections": v.corrections.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        })
    })
}

/// The verdict lines of a summary: a join's combined verdict and one line per branch, else the
/// corrected verdict next to the judge's claim.
pub(super) fn print_verdict(verdict: &Value) {
    let part = |which: &str, key: &str| {
        verdict
            .get(which)
            .and_then(|v| v.get(key))
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    let Some(branches) = verdict.get("branches").and_then(Value::as_array) else {
        outln!(
            "verdict  {} (aggregate {}) — the judge claimed {} ({})",
            part("corrected", "verdict").trim_matches('"'),
            part("corrected", "aggregate"),
            part("raw", "verdict").trim_matches('"'),
            part("raw", "aggregate"),
        );
        return;
    };
    let word = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("?").to_owned();
    outln!(
        "verdict  {} (aggregate {}) — {} of {} judges, the verdict the routes acted on",
        part("corrected", "verdict").trim_matches('"'),
        part("corrected", "aggregate"),
        word(verdict, "combine"),
        branches.len(),
    );
    for branch in branches {
        outln!(
            "  {}  {} × {} (aggregate {})",
            word(branch, "role"),
            word(branch, "verdict"),
            word(branch, "severity"),
            branch
                .get("aggregate")
                .map(ToString::to_string)
                .unwrap_or_default(),
        );
    }
}
