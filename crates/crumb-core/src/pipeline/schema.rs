//! JSON Schemas generated from the Rust types, and pass 2: validating a loaded document against them.
//!
//! Draft-07 because yaml-language-server (the editor integration people actually use) handles it
//! best. The committed `schemas/*.schema.json` are [`render`]ed from these and drift-tested.

use std::collections::HashSet;
use std::fmt::Write;
use std::path::Path;

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::pipeline::codes;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::located_yaml::{Document, Span, escape_segment};
use crate::pipeline::suggest;

use crate::pipeline::model::Pipeline;
use crate::pipeline::preset::Preset;

/// The pipeline schema.
pub fn pipeline_schema() -> Value {
    generate::<Pipeline>()
}

/// The preset schema.
pub fn preset_schema() -> Value {
    generate::<Preset>()
}

fn generate<T: JsonSchema>() -> Value {
    SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The committed text of a schema: pretty JSON and a final newline.
pub fn render(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

/// Pass 2: check `doc` against `schema`, turning every violation into a located diagnostic.
pub fn check(
    validator: &jsonschema::Validator,
    schema: &Value,
    doc: &Document,
    file: &Path,
    out: &mut Vec<Diagnostic>,
) {
    let errors: Vec<ValidationError<'_>> = validator.iter_errors(&doc.value).collect();
    let mut reported = HashSet::new();
    let mut found = Vec::new();
    for error in &errors {
        for diagnostic in describe(error, schema, doc, file) {
            // anyOf/oneOf branches can yield the same complaint twice; say it once.
            if reported.insert((diagnostic.code, diagnostic.message.clone(), diagnostic.span)) {
                found.push(diagnostic);
            }
        }
    }
    let typos = typos(&found);
    out.extend(found.into_iter().filter(|d| !typos.contains(&d.message)));
}

/// A misspelt key is one mistake: the unknown key (whose hint names the right one) is reported,
/// the required key it was meant to be is not reported missing too. Returns the messages of the
/// `missing-key` diagnostics to drop.
fn typos(found: &[Diagnostic]) -> HashSet<String> {
    // Both messages are made in `describe`: "<what> key `<name>` in <where>".
    let parse = |d: &Diagnostic, code: &codes::Code, lead: &str| -> Option<(String, String)> {
        let rest = d
            .message
            .strip_prefix(lead)
            .filter(|_| d.code == code.name)?;
        let (name, place) = rest.split_once("` in ")?;
        Some((name.to_string(), place.to_string()))
    };
    let unknown: Vec<(String, String)> = found
        .iter()
        .filter_map(|d| parse(d, &codes::UNKNOWN_KEY, "unknown key `"))
        .collect();
    found
        .iter()
        .filter(|d| {
            parse(d, &codes::MISSING_KEY, "missing required key `").is_some_and(|(name, place)| {
                unknown.iter().any(|(wrong, at)| {
                    *at == place && suggest::closest(wrong, [name.as_str()]).is_some()
                })
            })
        })
        .map(|d| d.message.clone())
        .collect()
}

/// A JSON pointer as people read it: `roles.builder.produces[0]`, or `the file` for the root.
pub(crate) fn display_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        return "the top level".into();
    }
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.parse::<usize>().is_ok() {
            let _ = write!(out, "[{segment}]");
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    format!("`{out}`")
}

fn describe(
    error: &ValidationError<'_>,
    schema: &Value,
    doc: &Document,
    file: &Path,
) -> Vec<Diagnostic> {
    let pointer = error.instance_path().as_str().to_string();
    let at = display_pointer(&pointer);
    let index = &doc.index;
    if let Some(diagnostic) = bound_or_pattern(error, &pointer, &at, doc, file) {
        return vec![diagnostic];
    }
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let allowed = allowed_keys(schema, error.schema_path().as_str());
            unexpected
                .iter()
                .map(|name| {
                    let child = format!("{pointer}/{}", escape_segment(name));
                    let suggestion = suggest::closest(name, allowed.iter().map(String::as_str));
                    let hint = match suggestion {
                        Some(s) => {
                            format!("did you mean `{s}`? accepted keys: {}", allowed.join(", "))
                        }
                        None => format!("accepted keys: {}", allowed.join(", ")),
                    };
                    Diagnostic::new(
                        &codes::UNKNOWN_KEY,
                        file,
                        format!("unknown key `{name}` in {at}"),
                    )
                    .at(index.key_span(&child))
                    .label("not accepted here")
                    .hint(hint)
                })
                .collect()
        }
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            vec![
                Diagnostic::new(
                    &codes::MISSING_KEY,
                    file,
                    format!("missing required key `{name}` in {at}"),
                )
                .at(index.key_span(&pointer))
                .label(format!("`{name}` is required here")),
            ]
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            let found = json_type(error.instance());
            vec![
                Diagnostic::new(
                    &codes::WRONG_TYPE,
                    file,
                    format!("{at} must be {}, found {found}", article(&expected)),
                )
                .at(index.value_span(&pointer))
                .label(format!("expected {}", yaml_words(&expected))),
            ]
        }
        ValidationErrorKind::Constant { expected_value } => {
            let word = expected_value
                .as_str()
                .map_or_else(|| expected_value.to_string(), str::to_string);
            vec![not_allowed(
                error.instance(),
                &[word],
                &at,
                index.value_span(&pointer),
                file,
            )]
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            describe_alternatives(context, &pointer, error, schema, doc, file)
        }
        _ => vec![
            Diagnostic::new(&codes::INVALID_VALUE, file, format!("{at}: {error}"))
                .at(index.value_span(&pointer)),
        ],
    }
}

/// anyOf/oneOf failed: find the branch the author meant and report its errors, instead of
/// "matches none of 6 schemas". A branch is ruled out when the value has the wrong type for
/// it, or when its discriminator (`kind`) differs.
fn describe_alternatives(
    branches: &[Vec<ValidationError<'static>>],
    pointer: &str,
    error: &ValidationError<'_>,
    schema: &Value,
    doc: &Document,
    file: &Path,
) -> Vec<Diagnostic> {
    let discriminator = format!("{pointer}/kind");
    let ruled_out = |errors: &Vec<ValidationError<'static>>| {
        errors.iter().any(|e| {
            let at = e.instance_path().as_str();
            let is_word = matches!(
                e.kind(),
                ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. }
            );
            (at == pointer
                && matches!(
                    e.kind(),
                    ValidationErrorKind::Type { .. } | ValidationErrorKind::Constant { .. }
                ))
                || (at == discriminator && is_word)
        })
    };
    let candidates: Vec<&Vec<ValidationError<'static>>> =
        branches.iter().filter(|b| !ruled_out(b)).collect();
    if let Some(best) = candidates.iter().min_by_key(|b| b.len()) {
        return best
            .iter()
            .flat_map(|e| describe(e, schema, doc, file))
            .collect();
    }
    let at = display_pointer(pointer);
    // Every branch is one allowed word (a documented enum), or every branch disagreed on the
    // discriminator (an unknown check `kind`): list the words.
    for target in [pointer, discriminator.as_str()] {
        let words: Vec<String> = branches
            .iter()
            .flatten()
            .filter(|e| e.instance_path().as_str() == target)
            .filter_map(|e| match e.kind() {
                ValidationErrorKind::Constant { expected_value } => {
                    expected_value.as_str().map(str::to_string)
                }
                _ => None,
            })
            .collect();
        if !words.is_empty() {
            let found = if target == pointer {
                error.instance().clone().into_owned()
            } else {
                error.instance().get("kind").cloned().unwrap_or(Value::Null)
            };
            return vec![not_allowed(
                &found,
                &words,
                &display_pointer(target),
                doc.index.value_span(target),
                file,
            )];
        }
    }
    let mut expected: Vec<String> = Vec::new();
    for e in branches.iter().flatten() {
        if let ValidationErrorKind::Type { kind } = e.kind()
            && e.instance_path().as_str() == pointer
        {
            let name = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            if !expected.contains(&name) {
                expected.push(name);
            }
        }
    }
    let found = json_type(error.instance());
    vec![
        Diagnostic::new(
            &codes::WRONG_TYPE,
            file,
            format!(
                "{at} must be {}, found {found}",
                article(&expected.join(" or "))
            ),
        )
        .at(doc.index.value_span(pointer))
        .label(format!("expected {}", yaml_words(&expected.join(" or ")))),
    ]
}

/// The words, bounds and patterns the schema states where a person meets them: an enum (a
/// `done:` word with its reason hint), `version` (only 1), a zero limit, a name outside its
/// pattern. `None` for every other error.
fn bound_or_pattern(
    error: &ValidationError<'_>,
    pointer: &str,
    at: &str,
    doc: &Document,
    file: &Path,
) -> Option<Diagnostic> {
    let index = &doc.index;
    match error.kind() {
        ValidationErrorKind::Minimum { .. } | ValidationErrorKind::Maximum { .. }
            if pointer == "/version" =>
        {
            Some(version_out_of_range(
                error.instance(),
                index.value_span(pointer),
                file,
            ))
        }
        ValidationErrorKind::Minimum { .. }
            if pointer.starts_with("/limits/") && error.instance().as_u64() == Some(0) =>
        {
            let name = pointer.trim_start_matches("/limits/").replace('/', ".");
            Some(
                Diagnostic::new(&codes::ZERO_LIMIT, file, format!("`{name}` is zero"))
                    .at(index.value_span(pointer))
                    .label("the session would stop before doing anything")
                    .hint("use a positive number"),
            )
        }
        ValidationErrorKind::Pattern { pattern } => {
            let shown = error
                .instance()
                .as_str()
                .map_or_else(|| error.instance().to_string(), str::to_string);
            Some(
                Diagnostic::new(
                    &codes::INVALID_VALUE,
                    file,
                    format!("`{shown}` is not allowed for {at}"),
                )
                .at(index.value_span(pointer))
                .label(format!("must match `{pattern}`"))
                .hint(pattern_hint(pattern)),
            )
        }
        ValidationErrorKind::Enum { options } => {
            let words: Vec<String> = options
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let diagnostic = not_allowed(
                error.instance(),
                &words,
                at,
                index.value_span(pointer),
                file,
            );
            Some(done_hint(diagnostic, pointer, error.instance()))
        }
        _ => None,
    }
}

/// `version` is not 1: a version this crumb does not know, or a number no version could be.
fn version_out_of_range(found: &Value, span: Option<Span>, file: &Path) -> Diagnostic {
    match found.as_u64().filter(|v| u32::try_from(*v).is_ok()) {
        Some(version) => Diagnostic::new(
            &codes::UNSUPPORTED_VERSION,
            file,
            format!("unsupported format version {version}"),
        )
        .at(span)
        .label("only version 1 exists")
        .hint("set `version: 1`"),
        None => Diagnostic::new(
            &codes::WRONG_TYPE,
            file,
            format!("the number at `version` is too large: {found}"),
        )
        .at(span)
        .hint("write a number in the field's range"),
    }
}

/// The words a pattern of the schema stands for, where it is one people meet.
fn pattern_hint(pattern: &str) -> String {
    if pattern == "^[A-Za-z0-9_-]+$" {
        "use letters, digits, `-` and `_` only".to_owned()
    } else {
        format!("write a value matching `{pattern}`")
    }
}

/// A `done:` word that is not an outcome is most often the reason meant (`done: approved`), and
/// `stopped` is the engine's own outcome: say so instead of only listing the words.
fn done_hint(mut diagnostic: Diagnostic, pointer: &str, found: &Value) -> Diagnostic {
    let Some(word) = found.as_str().map(str::trim).filter(|w| !w.is_empty()) else {
        return diagnostic;
    };
    if word == "stopped" && (pointer.ends_with("/done") || pointer.ends_with("/done/outcome")) {
        return diagnostic.hint(
            "`stopped` is the engine's own outcome (budgets, limits, breakers): declare one of pass, fail, partial, rejected",
        );
    }
    if !pointer.ends_with("/done") {
        return diagnostic;
    }
    let reason: String = word
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    diagnostic.message = format!("`done: {word}` is not an outcome");
    diagnostic.label = Some("outcomes: pass, fail, partial, rejected".to_owned());
    diagnostic.hint(format!(
        "did you mean `done: {{ outcome: pass, reason: {reason} }}`? the exit code follows the outcome, the reason is only recorded"
    ))
}

fn not_allowed(
    found: &Value,
    allowed: &[String],
    at: &str,
    span: Option<Span>,
    file: &Path,
) -> Diagnostic {
    let shown = found
        .as_str()
        .map_or_else(|| found.to_string(), str::to_string);
    let hint = match found
        .as_str()
        .and_then(|s| suggest::closest(s, allowed.iter().map(String::as_str)))
    {
        Some(s) => format!("did you mean `{s}`? allowed: {}", allowed.join(", ")),
        None => format!("allowed: {}", allowed.join(", ")),
    };
    Diagnostic::new(
        &codes::INVALID_VALUE,
        file,
        format!("`{shown}` is not allowed for {at}"),
    )
    .at(span)
    .label("not an allowed value")
    .hint(hint)
}

/// The keys the object schema owning an `additionalProperties` keyword accepts.
fn allowed_keys(schema: &Value, keyword_path: &str) -> Vec<String> {
    let parent = keyword_path.rsplit_once('/').map_or("", |(p, _)| p);
    schema
        .pointer(parent)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// YAML words for JSON types: mapping, list.
fn yaml_words(expected: &str) -> String {
    expected
        .replace("object", "mapping")
        .replace("array", "list")
}

/// `a mapping`, `an integer`.
fn article(expected: &str) -> String {
    let yaml = yaml_words(expected);
    let first = yaml.chars().next().unwrap_or('x');
    if "aeiou".contains(first) {
        format!("an {yaml}")
    } else {
        format!("a {yaml}")
    }
}
