//! One root cause, one diagnostic; and the JSON Schema refuses what `crumb validate` refuses, on
//! the fixtures as well as on the documents the core's property test generates.

use std::path::Path;

use crumb::pipeline::compile::{CompileOptions, compile_file};
use crumb::pipeline::schema::pipeline_schema;
use serde_json::Value;

use super::{expectation, fixtures};
use crate::support::repo_root;

fn diagnostics(file: &Path) -> Vec<String> {
    compile_file(
        &repo_root().join(file),
        &CompileOptions::default(),
        &crumb::fs::real_files(),
    )
    .diagnostics
    .iter()
    .map(|d| format!("{} {}", d.code, d.message))
    .collect()
}

#[test]
fn one_mistake_is_one_diagnostic() {
    for name in [
        "join-without-combine.yaml",
        "produces-qa-result.yaml",
        "produces-runner-kind.yaml",
        "extends-missing.yaml",
        "done-stopped.yaml",
        "bad-pipeline-name.yaml",
        "done-reason-word.yaml",
        "zero-budget.yaml",
    ] {
        let file = Path::new("tests/pipelines/invalid").join(name);
        let found = diagnostics(&file);
        let (code, _) = expectation(&file);
        let expected = if name == "zero-budget.yaml" { 2 } else { 1 };
        assert_eq!(found.len(), expected, "{name}: {found:#?}");
        assert!(
            found.iter().all(|d| d.starts_with(&code)),
            "{name}: {found:#?}"
        );
    }
}

/// The schema's verdict on a YAML file as written (no `extends`/`include` resolved).
fn schema_accepts(file: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(repo_root().join(file)).ok()?;
    let value: Value = serde_saphyr::from_str(&text).ok()?;
    if value.get("extends").is_some() || value.get("include").is_some() {
        // An editor sees the file alone; only the assembled document is the pipeline.
        return None;
    }
    let schema = pipeline_schema();
    let validator = jsonschema::draft7::new(&schema).expect("the generated schema compiles");
    Some(validator.is_valid(&value))
}

#[test]
fn schema_and_validate_agree_on_the_fixtures() {
    let mut valid = fixtures("tests/pipelines/valid");
    valid.extend(fixtures("pipelines"));
    for file in valid {
        let errors = diagnostics(&file);
        let validate_ok = compile_file(
            &repo_root().join(&file),
            &CompileOptions::default(),
            &crumb::fs::real_files(),
        )
        .table
        .is_some();
        assert!(validate_ok, "{}: {errors:#?}", file.display());
        if let Some(schema_ok) = schema_accepts(&file) {
            assert!(
                schema_ok,
                "{}: validate accepts it, the schema does not",
                file.display()
            );
        }
    }
    // A fixture refused for its shape (a value, a key, a type, a version, a zero limit) is
    // refused by the schema too.
    let shape_codes = [
        "crumb::invalid-value",
        "crumb::unknown-key",
        "crumb::missing-key",
        "crumb::wrong-type",
        "crumb::unsupported-version",
        "crumb::zero-limit",
    ];
    let mut checked = 0;
    for file in fixtures("tests/pipelines/invalid") {
        let (code, _) = expectation(&file);
        if !shape_codes.contains(&code.as_str()) {
            continue;
        }
        if let Some(schema_ok) = schema_accepts(&file) {
            assert!(
                !schema_ok,
                "{}: validate refuses it ({code}), the schema accepts it",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} shape fixtures checked");
}
