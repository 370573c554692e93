//! The schema and `validate` accept exactly the same documents. Documents are generated from the
//! schema's own shapes: a clean pipeline with one value replaced by a value the schema offers at
//! that place (its enum words, strings matching or missing its pattern, integers around its
//! bounds) or by a near miss. An editor that trusts the schema must flag exactly what
//! `crumb validate` refuses. The invalid fixtures under `tests/pipelines/invalid/` are run
//! through both as well (by the `crumb` crate's tests, which own the files).

use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::pipeline::compile::{CompileOptions, compile_str};
use crate::pipeline::schema::pipeline_schema;
use crate::pipeline::source::InMemory;

/// A pipeline that validates clean (templates are not read: they are not the schema's concern).
fn base() -> Value {
    json!({
        "version": 1,
        "name": "agreement",
        "description": "one clean pipeline, one value changed at a time",
        "roles": {
            "writer": { "template": "w.md.j2", "produces": ["build"] },
            "judge": { "template": "j.md.j2", "produces": ["judge.score"] }
        },
        "routes": [
            { "on": "goal", "spawn": "writer" },
            { "on": "build", "spawn": "judge" },
            { "on": "verdict", "when": { "verdict": "PASS" }, "done": "pass" },
            { "on": "verdict", "spawn": "writer", "with": "feedback" }
        ],
        "limits": { "max_verify": 5 }
    })
}

/// The schema's verdict on `document`.
fn schema_accepts(document: &Value) -> bool {
    let schema = pipeline_schema();
    let validator = jsonschema::draft7::new(&schema).expect("the generated schema compiles");
    validator.is_valid(document)
}

/// `validate`'s verdict on `document` (JSON is YAML: the loader reads it as written).
fn validate_accepts(document: &Value) -> bool {
    let text = serde_json::to_string_pretty(document).expect("a JSON value prints");
    let compiled = compile_str(
        &text,
        Path::new("agreement.yaml"),
        &CompileOptions {
            check_templates: false,
        },
        &InMemory::new().shared(),
    );
    !compiled.has_errors()
}

/// The enum words the schema lists anywhere under `definition` (or at the top level).
fn enum_words(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(words)) = map.get("enum") {
                out.extend(words.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            if let Some(Value::String(word)) = map.get("const") {
                out.push(word.clone());
            }
            for value in map.values() {
                enum_words(value, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| enum_words(v, out)),
        _ => {}
    }
}

/// Strings the schema's shapes suggest: every word it names, a few near misses of them, and
/// arbitrary printable text.
fn words() -> impl Strategy<Value = String> {
    let mut named = Vec::new();
    enum_words(&pipeline_schema(), &mut named);
    named.sort();
    named.dedup();
    let misses: Vec<String> = named
        .iter()
        .flat_map(|w| [w.to_uppercase(), format!(" {w}"), format!("{w}!")])
        .chain(["stopped".to_owned(), String::new()])
        .collect();
    prop_oneof![
        proptest::sample::select(named),
        proptest::sample::select(misses),
        "[ -~]{0,12}",
        "[A-Za-z0-9_-]{1,12}",
    ]
}

/// One place of the base document and the value put there.
#[derive(Debug, Clone)]
enum Change {
    Name(String),
    Description(String),
    Version(i64),
    DoneWord(String),
    DoneOutcome(String),
    DoneReason(String),
    WhenVerdict(String),
    With(String),
    MaxVerify(i64),
    TokensHard(i64),
}

fn changes() -> impl Strategy<Value = Change> {
    prop_oneof![
        words().prop_map(Change::Name),
        words().prop_map(Change::Description),
        (-1i64..4).prop_map(Change::Version),
        words().prop_map(Change::DoneWord),
        words().prop_map(Change::DoneOutcome),
        words().prop_map(Change::DoneReason),
        words().prop_map(Change::WhenVerdict),
        words().prop_map(Change::With),
        (-2i64..40).prop_map(Change::MaxVerify),
        (-2i64..5).prop_map(Change::TokensHard),
    ]
}

fn apply(change: &Change) -> Value {
    let mut doc = base();
    match change {
        Change::Name(s) => doc["name"] = json!(s),
        Change::Description(s) => doc["description"] = json!(s),
        Change::Version(n) => doc["version"] = json!(n),
        Change::DoneWord(s) => doc["routes"][2]["done"] = json!(s),
        Change::DoneOutcome(s) => {
            doc["routes"][2]["done"] = json!({ "outcome": s, "reason": "ok" });
        }
        Change::DoneReason(s) => {
            doc["routes"][2]["done"] = json!({ "outcome": "pass", "reason": s });
        }
        Change::WhenVerdict(s) => doc["routes"][2]["when"]["verdict"] = json!(s),
        Change::With(s) => doc["routes"][3]["with"] = json!(s),
        Change::MaxVerify(n) => doc["limits"]["max_verify"] = json!(n),
        Change::TokensHard(n) => doc["limits"]["tokens"] = json!({ "warn": 0, "hard": n }),
    }
    doc
}

#[test]
fn the_base_document_is_accepted_by_both() {
    assert!(schema_accepts(&base()));
    assert!(validate_accepts(&base()));
}

#[test]
fn the_reported_disagreements_are_refused_by_both() {
    for change in [
        Change::DoneOutcome("stopped".into()),
        Change::DoneWord("stopped".into()),
        Change::Name("bad name!".into()),
    ] {
        let doc = apply(&change);
        assert!(!schema_accepts(&doc), "schema accepts {change:?}");
        assert!(!validate_accepts(&doc), "validate accepts {change:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn schema_and_validate_agree_on_generated_documents(change in changes()) {
        let doc = apply(&change);
        prop_assert_eq!(
            schema_accepts(&doc),
            validate_accepts(&doc),
            "schema and validate disagree on {:?}",
            change
        );
    }
}
