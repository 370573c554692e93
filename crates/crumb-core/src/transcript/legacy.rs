//! Reading transcript lines in older shapes (written by earlier versions of the format): map them
//! onto our [`Event`] where the meaning is clear, and say what was dropped.
//!
//! Mappings:
//! - scores under `data.scores` (dimensions as `{value|score, source}` objects or bare numbers), with
//!   `data.verdict` / `data.aggregate` / `data.feedback` / `data.deviation`, become `scores`;
//! - `in_reply_to` becomes `parent_event_id`;
//! - a dimension `source` of `hybrid` (no longer a source) becomes `verifier-llm`;
//! - top-level, `metadata` and `scores` keys our envelope does not declare are dropped and listed;
//! - artifacts without a valid `sha256` are dropped.
//!
//! Anything else that still does not fit (an unknown `kind`, no `id`) is reported, not guessed.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::transcript::{Event, Kind};

/// The keys of our envelope.
const TOP_LEVEL: [&str; 13] = [
    "id",
    "ts",
    "session_id",
    "from",
    "kind",
    "to",
    "parent_event_id",
    "step",
    "body",
    "data",
    "artifacts",
    "scores",
    "metadata",
];

/// The keys of our `metadata`.
const METADATA: [&str; 22] = [
    "visibility",
    "harness",
    "provider",
    "model",
    "adapter_session_id",
    "tool",
    "deterministic",
    "effect_id",
    "cross_provider",
    "evidence_kind",
    "turn",
    "tokens_in",
    "tokens_out",
    "thinking_tokens",
    "cache_read",
    "cache_write",
    "cost_usd",
    "latency_ms",
    "ack_for",
    "in_reply_to",
    "consumed_intervene_ids",
    "audit_violations",
];

/// The keys of our `scores`.
const SCORES: [&str; 13] = [
    "D1",
    "D2",
    "D3",
    "D4",
    "D5",
    "D6",
    "aggregate",
    "verdict",
    "feedback",
    "suggested_change",
    "deviation",
    "courteval",
    "audit_violations",
];

/// A foreign line mapped onto our envelope.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub event: Event,
    /// What had to change, e.g. `data.scores → scores`, `dropped metadata.preset`.
    pub changes: Vec<String>,
}

/// Why a line could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unmappable {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("{0}")]
    Invalid(String),
}

/// Whether a verdict event carries its scores only in the legacy place (`data.scores`).
pub fn has_data_scores(event: &Event) -> bool {
    data_scores_kind(event.kind)
        && event.scores.is_none()
        && super::payload::data(event)
            .is_some_and(|d| d.get("scores").is_some_and(Value::is_object))
}

/// Whether an artifact's `sha256` is one the mapping keeps: 64 lower-case hex digits.
pub fn valid_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Kinds whose legacy lines carried their scores under `data` (see [`has_data_scores`]).
pub fn data_scores_kind(kind: Kind) -> bool {
    matches!(kind, Kind::JudgeScore | Kind::VerifyResult)
}

/// Map one parsed JSON line onto an [`Event`].
pub fn map(value: Value) -> Result<Mapped, Unmappable> {
    let Value::Object(mut object) = value else {
        return Err(Unmappable::NotAnObject);
    };
    let mut changes = Vec::new();

    if let Some(parent) = object.remove("in_reply_to")
        && !object.contains_key("parent_event_id")
        && parent.is_string()
    {
        object.insert("parent_event_id".into(), parent);
        changes.push("in_reply_to → parent_event_id".to_owned());
    }
    for key in ["parent_event_id", "to", "body", "step"] {
        if object.get(key).is_some_and(|v| !v.is_string()) {
            object.remove(key);
            changes.push(format!("dropped non-string {key}"));
        }
    }
    let unknown: Vec<String> = object
        .keys()
        .filter(|k| !TOP_LEVEL.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in unknown {
        object.remove(&key);
        changes.push(format!("dropped {key}"));
    }

    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        keep_only(metadata, &METADATA, "metadata", &mut changes);
    } else if object.remove("metadata").is_some() {
        changes.push("dropped non-object metadata".to_owned());
    }
    if object.get("data").is_some_and(|d| !d.is_object()) {
        object.remove("data");
        changes.push("dropped non-object data".to_owned());
    }

    lift_data_scores(&mut object, &mut changes);
    if let Some(Value::Object(scores)) = object.get_mut("scores") {
        keep_only(scores, &SCORES, "scores", &mut changes);
        normalise_dimensions(scores, &mut changes);
    } else if object.get("scores").is_some() {
        object.remove("scores");
        changes.push("dropped non-object scores".to_owned());
    }

    if let Some(Value::Array(artifacts)) = object.get_mut("artifacts") {
        let before = artifacts.len();
        artifacts.retain(|a| {
            a.get("path").is_some_and(Value::is_string)
                && a.get("sha256")
                    .and_then(Value::as_str)
                    .is_some_and(valid_sha256)
        });
        if let Some(kept) = Some(artifacts.len()).filter(|&kept| kept != before) {
            changes.push(format!(
                "dropped {} artifact(s) without path/sha256",
                before - kept
            ));
        }
        for artifact in artifacts.iter_mut() {
            if let Value::Object(a) = artifact {
                a.retain(|k, _| matches!(k.as_str(), "path" | "sha256" | "role"));
            }
        }
    } else if object.remove("artifacts").is_some() {
        changes.push("dropped non-array artifacts".to_owned());
    }

    // Read from a borrowed value: the object stays whole for the fallback below, uncloned.
    let mut value = Value::Object(object);
    match Event::deserialize(&value) {
        Ok(event) => Ok(Mapped { event, changes }),
        Err(first) => {
            // Last resort: keep the envelope and drop the optional parts that still do not fit.
            for key in ["scores", "metadata", "step", "artifacts"] {
                let removed = value
                    .as_object_mut()
                    .and_then(|object| object.remove(key))
                    .is_some();
                if removed {
                    changes.push(format!("dropped invalid {key}"));
                    if let Ok(event) = Event::deserialize(&value) {
                        return Ok(Mapped { event, changes });
                    }
                }
            }
            Err(Unmappable::Invalid(first.to_string()))
        }
    }
}

fn keep_only(
    map: &mut Map<String, Value>,
    allowed: &[&str],
    prefix: &str,
    changes: &mut Vec<String>,
) {
    let unknown: Vec<String> = map
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in unknown {
        map.remove(&key);
        changes.push(format!("dropped {prefix}.{key}"));
    }
}

/// `data.scores` (+ `data.verdict`, `data.aggregate`, …) → `scores`, when `scores` is absent.
fn lift_data_scores(object: &mut Map<String, Value>, changes: &mut Vec<String>) {
    if object.get("scores").is_some_and(|s| !s.is_null()) {
        return;
    }
    object.remove("scores");
    let Some(Value::Object(data)) = object.get("data") else {
        return;
    };
    let Some(Value::Object(legacy)) = data.get("scores") else {
        return;
    };
    let mut scores = Map::new();
    for (key, value) in legacy {
        if key.len() == 2 && key.starts_with('D') {
            scores.insert(key.clone(), value.clone());
        }
    }
    for key in [
        "verdict",
        "aggregate",
        "feedback",
        "suggested_change",
        "deviation",
    ] {
        if let Some(value) = data.get(key).or_else(|| legacy.get(key)) {
            scores.insert(key.to_owned(), value.clone());
        }
    }
    object.insert("scores".into(), Value::Object(scores));
    changes.push("data.scores → scores".to_owned());
}

/// Dimensions as `{score, source}`: accept bare numbers and `value`, default the source.
fn normalise_dimensions(scores: &mut Map<String, Value>, changes: &mut Vec<String>) {
    for name in super::scores::SLOT_IDS {
        let Some(value) = scores.get_mut(name) else {
            continue;
        };
        let default_source = if name == "D2" || name == "D6" {
            "qa-check-effect"
        } else {
            "verifier-llm"
        };
        let number = match value {
            Value::Number(n) => n.as_f64(),
            Value::Object(d) => d
                .get("score")
                .or_else(|| d.get("value"))
                .and_then(Value::as_f64),
            _ => None,
        };
        let Some(number) = number else {
            scores.remove(name);
            changes.push(format!("dropped scores.{name} without a number"));
            continue;
        };
        let source = match value.get("source").and_then(Value::as_str) {
            Some(s @ ("verifier-llm" | "qa-check-effect" | "reducer-auto")) => s.to_owned(),
            _ => default_source.to_owned(),
        };
        let mut dimension = Map::new();
        dimension.insert("score".into(), number.into());
        dimension.insert("source".into(), Value::String(source));
        if let Some(lookup) = value.get("lookup").and_then(Value::as_str) {
            dimension.insert("lookup".into(), Value::String(lookup.to_owned()));
        }
        if value.as_object() != Some(&dimension) {
            changes.push(format!("normalised scores.{name}"));
        }
        *value = Value::Object(dimension);
    }
    if let Some(deviation) = scores.remove("deviation") {
        let severity = match &deviation {
            Value::String(kind) => Some(kind.as_str()),
            Value::Object(d) => d.get("type").and_then(Value::as_str),
            _ => None,
        }
        .filter(|kind| matches!(*kind, "Critical" | "Important" | "Minor"));
        match severity {
            Some(kind) => {
                let normal = serde_json::json!({ "type": kind });
                if deviation != normal {
                    changes.push("normalised scores.deviation".to_owned());
                }
                scores.insert("deviation".into(), normal);
            }
            None => changes.push("dropped scores.deviation with an unknown type".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn data_scores_become_scores() {
        let line = json!({
            "id": "01KQMWN9DSF17TZJEXA3JF7R00", "ts": "2026-05-02T17:40:00.000Z", "session_id": "s",
            "from": "verifier", "kind": "judge.score",
            "data": {"verdict": "PARTIAL", "aggregate": 19.5,
                     "scores": {"D1": {"name": "spec_fit", "value": 3.5, "source": "verifier-llm", "evidence": "x"},
                                "D2": 5, "D3": {"value": 3.5, "source": "hybrid"}}},
            "metadata": {"verifier_provider": "anthropic", "provider": "anthropic"},
            "task_id": "t"
        });
        let mapped = map(line).expect("maps");
        let scores = mapped.event.scores.expect("scores");
        assert_eq!(scores.d1.map(|d| d.score), Some(3.5));
        assert_eq!(scores.d2.map(|d| d.score), Some(5.0));
        assert_eq!(scores.d3.map(|d| d.score), Some(3.5));
        assert_eq!(scores.verdict, Some(crate::vocab::Verdict::Partial));
        assert!(mapped.changes.iter().any(|c| c == "data.scores → scores"));
        assert!(
            mapped
                .changes
                .iter()
                .any(|c| c == "dropped metadata.verifier_provider")
        );
        assert!(mapped.changes.iter().any(|c| c == "dropped task_id"));
    }

    #[test]
    fn optional_parts_that_still_do_not_fit_are_dropped_one_by_one() {
        let line = json!({
            "id": "01KQMWN9DSF17TZJEXA3JF7R00", "ts": "2026-05-02T17:40:00.000Z", "session_id": "s",
            "from": "verifier", "kind": "judge.score", "body": "kept",
            "scores": {"verdict": "MAYBE", "aggregate": 20},
            "metadata": {"tokens_in": -1}
        });
        let mapped = map(line).expect("maps once the invalid parts are gone");
        assert_eq!(mapped.event.body.as_deref(), Some("kept"));
        assert!(mapped.event.scores.is_none());
        assert!(mapped.event.metadata.is_none());
        assert_eq!(
            mapped.changes,
            vec!["dropped invalid scores", "dropped invalid metadata"]
        );
        // Dropping every optional part is not enough without an id: the first error is reported.
        let line = json!({"ts": "x", "session_id": "s", "from": "a", "kind": "note", "step": 3});
        assert!(matches!(map(line), Err(Unmappable::Invalid(e)) if e.contains("id")));
    }

    #[test]
    fn unknown_kinds_and_non_objects_are_reported() {
        assert_eq!(map(json!([1, 2])).unwrap_err(), Unmappable::NotAnObject);
        let line = json!({"id": "01KQMWN9DSF17TZJEXA3JF7R00", "ts": "x", "session_id": "s", "from": "a", "kind": "Weird"});
        assert!(matches!(map(line), Err(Unmappable::Invalid(_))));
    }
}
