//! `crumb run --set name=value` and `--input file`: the values of a pipeline's declared inputs,
//! type-checked against the compiled declarations before any session exists, and shown in the
//! run's header and summary.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value;

use crate::pipeline::input_values::{self, Given, InputError};
use crate::pipeline::inputs::InputSpec;

/// Most bytes of an `--input` file (inputs are a few short values).
pub(crate) const MAX_INPUT_FILE_BYTES: u64 = 256 * 1024;

/// The `name=value` pairs of an `--input` file (a YAML or JSON mapping), in file order.
pub(crate) fn read_file(path: &Path) -> Result<Vec<(String, Value)>, String> {
    let shown = path.display();
    let bytes = crate::fs::bounded_read::read(path, MAX_INPUT_FILE_BYTES)
        .map_err(|e| format!("--input {shown}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("--input {shown}: not valid UTF-8"))?;
    // JSON is YAML, so one parser reads both.
    let value: Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("--input {shown}: not YAML or JSON: {e}"))?;
    match value {
        Value::Object(map) => Ok(map.into_iter().collect()),
        Value::Null => Ok(Vec::new()),
        _ => Err(format!(
            "--input {shown}: expected a mapping of input names to values, e.g. `audience: engineers`"
        )),
    }
}

/// [`resolve`] for `crumb run`: the problems are a usage error, before anything starts.
pub(crate) fn check(
    specs: &[InputSpec],
    sets: &[String],
    file: Option<&Path>,
) -> Result<IndexMap<String, Value>, crate::cli::error::CommandError> {
    resolve(specs, sets, file).map_err(|problems| {
        crate::cli::error::CommandError::usage(format!(
            "invalid inputs (nothing was started):\n{problems}"
        ))
    })
}

/// Every input's value from `--input` (first) and `--set` (later, so it wins), checked against
/// `specs`; `Err` lists every problem, one per line.
pub(crate) fn resolve(
    specs: &[InputSpec],
    sets: &[String],
    file: Option<&Path>,
) -> Result<IndexMap<String, Value>, String> {
    let mut given: Vec<(String, Given, String)> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    if let Some(path) = file {
        match read_file(path) {
            Ok(pairs) => given.extend(pairs.into_iter().map(|(name, value)| {
                (
                    name,
                    Given::Value(value),
                    format!("--input {}", path.display()),
                )
            })),
            Err(err) => problems.push(err),
        }
    }
    for set in sets {
        match input_values::parse_set(set) {
            Ok((name, text)) => given.push((name, Given::Text(text), "--set".to_owned())),
            Err(err) => problems.push(format!("--set {err}")),
        }
    }
    let resolved = input_values::resolve(specs, &given);
    if let Err(errors) = &resolved {
        problems.extend(errors.iter().map(InputError::to_string));
    }
    match resolved {
        Ok(values) if problems.is_empty() => Ok(values),
        _ => Err(problems.join("\n")),
    }
}

/// A fork's inputs: the parent's recorded values with `sets` written over them, checked again.
pub(crate) fn resolve_over(
    specs: &[InputSpec],
    recorded: &IndexMap<String, Value>,
    sets: &[String],
) -> Result<IndexMap<String, Value>, String> {
    let mut given: Vec<(String, Given, String)> = recorded
        .iter()
        .map(|(name, value)| {
            (
                name.clone(),
                Given::Value(value.clone()),
                "the parent session".to_owned(),
            )
        })
        .collect();
    let mut problems = Vec::new();
    for set in sets {
        match input_values::parse_set(set) {
            Ok((name, text)) => given.push((name, Given::Text(text), "--set".to_owned())),
            Err(err) => problems.push(format!("--set {err}")),
        }
    }
    match input_values::resolve(specs, &given) {
        Ok(values) if problems.is_empty() => Ok(values),
        Ok(_) => Err(problems.join("\n")),
        Err(errors) => {
            problems.extend(errors.iter().map(InputError::to_string));
            Err(problems.join("\n"))
        }
    }
}

/// `audience = "engineers"`: one header line per input, values as JSON so types show.
pub(crate) fn lines(values: &IndexMap<String, Value>) -> Vec<String> {
    values
        .iter()
        .map(|(name, value)| format!("{name} = {value}"))
        .collect()
}
