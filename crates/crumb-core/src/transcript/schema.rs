//! The transcript JSON Schema, generated from the Rust types so it cannot drift from the parser.
//!
//! `crumb schema transcript` prints [`render`]; `schemas/transcript.schema.json` is its committed
//! output (a test keeps them equal).

use serde_json::Value;

use super::event::{Draft, Event};
use super::violation::Violation;

/// The schema of one transcript line (JSON Schema 2020-12).
pub fn transcript_schema() -> Value {
    let mut schema = schemars::schema_for!(Event).to_value();
    forbid_null(&mut schema);
    if let Some(object) = schema.as_object_mut() {
        let mut ordered = serde_json::Map::new();
        for key in ["$schema", "title", "description"] {
            if let Some(value) = object.remove(key) {
                ordered.insert(key.to_owned(), value);
            }
        }
        ordered.extend(std::mem::take(object));
        *object = ordered;
    }
    schema
}

/// The schema of a draft given to `crumb event` or a writer (no `id`, `ts`, `session_id`).
pub fn draft_schema() -> Value {
    let mut schema = schemars::schema_for!(Draft).to_value();
    forbid_null(&mut schema);
    schema
}

/// Optional fields are omitted, never `null` (a `null` would be one more shape for every reader to
/// accept). schemars describes `Option<T>` as "T or null"; drop the null branch.
fn forbid_null(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    object.insert("type".to_owned(), only);
                }
            }
            if let Some(Value::Array(branches)) = object.get("anyOf")
                && branches.len() == 2
                && branches
                    .iter()
                    .any(|b| b == &serde_json::json!({"type": "null"}))
            {
                let kept = branches
                    .iter()
                    .find(|b| *b != &serde_json::json!({"type": "null"}))
                    .cloned();
                object.remove("anyOf");
                if let Some(Value::Object(kept)) = kept {
                    for (key, value) in kept {
                        object.entry(key).or_insert(value);
                    }
                }
            }
            object.values_mut().for_each(forbid_null);
        }
        Value::Array(items) => items.iter_mut().for_each(forbid_null),
        _ => {}
    }
}

/// The committed text of `schemas/transcript.schema.json`: pretty JSON and a final newline.
pub fn render() -> String {
    let mut text = serde_json::to_string_pretty(&transcript_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// Every place where `value` breaks `schema`, as JSON pointers with messages. Where the schema's
/// message is a vague "not valid under any of the schemas" (enums with documented variants), the
/// parser's own message (`fallback`, e.g. "unknown variant `x`, expected one of …") is used.
pub fn locate(schema: &Value, value: &Value, fallback: &str) -> Vec<Violation> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Vec::new();
    };
    validator
        .iter_errors(value)
        .map(|error| {
            let unhelpful = matches!(
                error.kind(),
                jsonschema::error::ValidationErrorKind::AnyOf { .. }
                    | jsonschema::error::ValidationErrorKind::OneOfNotValid { .. }
            );
            let message = if unhelpful {
                fallback.to_owned()
            } else {
                error.to_string()
            };
            Violation {
                path: error.instance_path().to_string(),
                message,
            }
        })
        .collect()
}
