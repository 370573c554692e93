//! Acceptance predicates: the JavaScript checks a planner attaches to its `spec`
//! (`data.ac_predicates: [{id, intent, predicate, action?, wait_ms?, timeout_ms?}]`).
//!
//! They come from an agent (or a person's `--ac` file), so parsing is defensive: every entry is
//! validated and bounded, and a bad entry is reported instead of dropped or trusted.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most predicates read from one spec.
pub(crate) const MAX_PREDICATES: usize = 64;
/// Longest `predicate` or `action` source accepted.
pub(crate) const MAX_SOURCE_BYTES: usize = 32 * 1024;
/// Default and largest `timeout_ms`.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 3_000;
pub(crate) const MAX_TIMEOUT_MS: u64 = 60_000;
/// Default and largest `wait_ms` (delay between the action and the first poll).
pub(crate) const DEFAULT_WAIT_MS: u64 = 0;
pub(crate) const MAX_WAIT_MS: u64 = 30_000;

/// One acceptance predicate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AcPredicate {
    pub id: String,
    #[serde(default)]
    pub intent: String,
    /// A JavaScript expression, truthy when the criterion is met.
    pub predicate: String,
    /// JavaScript run once before polling (e.g. dispatching a key press).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl AcPredicate {
    pub(crate) fn wait_ms(&self) -> u64 {
        self.wait_ms.unwrap_or(DEFAULT_WAIT_MS)
    }

    pub(crate) fn timeout_ms(&self) -> u64 {
        self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)
    }
}

/// Predicates read from a document, and what was wrong with the entries that were refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub predicates: Vec<AcPredicate>,
    pub problems: Vec<String>,
}

/// Read predicates from a JSON array, or an object holding `ac_predicates` (a spec's `data`).
pub(crate) fn parse(doc: &Value) -> Parsed {
    let mut out = Parsed::default();
    let list = match doc {
        Value::Array(items) => items.as_slice(),
        Value::Object(map) => match map.get("ac_predicates") {
            Some(Value::Array(items)) => items.as_slice(),
            Some(_) => {
                out.problems.push("`ac_predicates` is not an array".into());
                return out;
            }
            None => return out,
        },
        _ => {
            out.problems
                .push("expected an array of predicates or an object with `ac_predicates`".into());
            return out;
        }
    };
    if list.len() > MAX_PREDICATES {
        out.problems.push(format!(
            "{} predicates given; only the first {MAX_PREDICATES} are run",
            list.len()
        ));
    }
    for (index, item) in list.iter().take(MAX_PREDICATES).enumerate() {
        match validate(item) {
            Ok(p) if out.predicates.iter().any(|q| q.id == p.id) => {
                out.problems
                    .push(format!("predicate #{index}: duplicate id `{}`", p.id));
            }
            Ok(p) => out.predicates.push(p),
            Err(why) => out.problems.push(format!("predicate #{index}: {why}")),
        }
    }
    out
}

fn validate(item: &Value) -> Result<AcPredicate, String> {
    let p: AcPredicate = serde_json::from_value(item.clone()).map_err(|e| e.to_string())?;
    let id_ok = !p.id.is_empty()
        && p.id.len() <= 64
        && p.id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !id_ok {
        return Err("`id` must be 1–64 characters of letters, digits, `-`, `_` or `.`".into());
    }
    if p.predicate.trim().is_empty() {
        return Err(format!("`{}`: `predicate` is empty", p.id));
    }
    if p.predicate.len() > MAX_SOURCE_BYTES
        || p.action
            .as_ref()
            .is_some_and(|a| a.len() > MAX_SOURCE_BYTES)
    {
        return Err(format!(
            "`{}`: source longer than {MAX_SOURCE_BYTES} bytes",
            p.id
        ));
    }
    if p.intent.len() > 4096 {
        return Err(format!("`{}`: `intent` longer than 4096 bytes", p.id));
    }
    if p.timeout_ms.is_some_and(|t| t == 0 || t > MAX_TIMEOUT_MS) {
        return Err(format!(
            "`{}`: `timeout_ms` must be 1–{MAX_TIMEOUT_MS}",
            p.id
        ));
    }
    if p.wait_ms.is_some_and(|w| w > MAX_WAIT_MS) {
        return Err(format!(
            "`{}`: `wait_ms` must be at most {MAX_WAIT_MS}",
            p.id
        ));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_spec_data_and_reports_bad_entries() {
        let parsed = parse(&json!({"ac_predicates": [
            {"id": "AC1", "intent": "canvas", "predicate": "!!document.querySelector('canvas')"},
            {"id": "AC1", "predicate": "true"},
            {"id": "bad id!", "predicate": "true"},
            {"id": "AC3", "predicate": "true", "timeout_ms": 0},
            {"predicate": "true"},
            42
        ]}));
        assert_eq!(parsed.predicates.len(), 1);
        assert_eq!(parsed.problems.len(), 5, "{:?}", parsed.problems);
        assert!(
            parse(&json!({"acceptance_criteria": []}))
                .predicates
                .is_empty()
        );
        assert_eq!(parse(&json!("x")).problems.len(), 1);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_json(s in "\\PC{0,300}") {
            if let Ok(v) = serde_json::from_str::<Value>(&s) {
                let parsed = parse(&v);
                proptest::prop_assert!(parsed.predicates.len() <= MAX_PREDICATES);
            }
        }

        #[test]
        fn accepted_predicates_are_bounded(id in "[A-Za-z0-9_.-]{1,80}", t in 0u64..200_000, w in 0u64..100_000) {
            let parsed = parse(&serde_json::json!([{ "id": id, "predicate": "1", "timeout_ms": t, "wait_ms": w }]));
            for p in parsed.predicates {
                proptest::prop_assert!(p.id.len() <= 64);
                proptest::prop_assert!(p.timeout_ms() <= MAX_TIMEOUT_MS && p.timeout_ms() > 0);
                proptest::prop_assert!(p.wait_ms() <= MAX_WAIT_MS);
            }
        }
    }
}
