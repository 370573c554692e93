//! `inputs:` — a pipeline's typed parameters: their declarations, the checks `crumb validate`
//! runs on them, and how one value is checked against a declaration (shared by the validator,
//! `crumb run --set`/`--input` and `crumb batch`'s `set:`, so all three agree).
//!
//! The goal is the one built-in input: always a string, filled by `crumb run`'s positional
//! pitch. A pipeline may declare `goal` to describe it or give it a default, never to retype it.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::pipeline::codes;
use crate::pipeline::located_yaml::escape_segment;
use crate::pipeline::pass_context::Ctx;

/// The name of the built-in input the positional pitch fills.
pub const GOAL: &str = "goal";

/// One declared input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputDecl {
    /// `string` (the default), `integer`, `number`, `boolean`, or `enum` (one of `values`).
    #[serde(rename = "type", default)]
    pub kind: InputType,
    /// The allowed strings of an `enum` input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// The value when none is given; an input without one is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// What the input means; quoted when a required input is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The type of an input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    #[default]
    String,
    Integer,
    Number,
    Boolean,
    Enum,
}

impl InputType {
    pub fn as_str(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Integer => "integer",
            InputType::Number => "number",
            InputType::Boolean => "boolean",
            InputType::Enum => "enum",
        }
    }
}

/// A declared input as the compiled table carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputSpec {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: InputType,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl InputSpec {
    /// `an integer`, or `one of a, b, c` for an enum: how errors name the type.
    pub(crate) fn type_words(&self) -> String {
        match self.kind {
            InputType::Enum => format!("one of {}", self.values.join(", ")),
            InputType::Integer => "an integer".to_owned(),
            kind => format!("a {}", kind.as_str()),
        }
    }

    /// `value` (from a YAML or JSON file, or a default) as this input holds it, or why not.
    pub fn accept(&self, value: &Value) -> Result<Value, String> {
        let got = value_word(value);
        match (self.kind, value) {
            (InputType::String, Value::String(_)) | (InputType::Boolean, Value::Bool(_)) => {
                Ok(value.clone())
            }
            (InputType::Integer, Value::Number(n)) if n.as_i64().is_some() => Ok(value.clone()),
            (InputType::Number, Value::Number(_)) => Ok(value.clone()),
            (InputType::Enum, Value::String(s)) => self.enum_value(s),
            (InputType::String | InputType::Enum, Value::Number(_) | Value::Bool(_)) => {
                Err(format!("got {got} `{value}`; quote it to make it a string"))
            }
            _ => Err(format!("got {got}")),
        }
    }

    /// `text` (from `--set name=text`) parsed as this input's type, or why not.
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        match self.kind {
            InputType::String => Ok(Value::String(text.to_owned())),
            InputType::Enum => self.enum_value(text),
            InputType::Integer => text
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("`{text}` is not a whole number")),
            InputType::Number => text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("`{text}` is not a finite number")),
            InputType::Boolean => match text.trim() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err(format!("`{text}` is neither `true` nor `false`")),
            },
        }
    }

    fn enum_value(&self, text: &str) -> Result<Value, String> {
        if self.values.iter().any(|v| v == text) {
            return Ok(Value::String(text.to_owned()));
        }
        let hint =
            crate::pipeline::suggest::did_you_mean(text, self.values.iter().map(String::as_str))
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
        Err(format!(
            "`{text}` is not one of {}{hint}",
            self.values.join(", ")
        ))
    }

    /// A value of this input for rendering templates at validate time.
    pub fn sample(&self) -> Value {
        if let Some(default) = self.default.as_ref().and_then(|d| self.accept(d).ok()) {
            return default;
        }
        match self.kind {
            InputType::String => Value::String(format!("sample {}", self.name)),
            InputType::Enum => self
                .values
                .first()
                .map_or(Value::Null, |v| Value::String(v.clone())),
            InputType::Integer | InputType::Number => Value::from(1),
            InputType::Boolean => Value::Bool(true),
        }
    }
}

/// `a string`, `a number`, … for error messages.
fn value_word(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.as_i64().is_some() || n.as_u64().is_some() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Whether `name` can be read in a template as `inputs.<name>`.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The table's inputs, in declaration order.
pub fn lower(declared: &IndexMap<String, InputDecl>) -> Vec<InputSpec> {
    declared
        .iter()
        .map(|(name, decl)| InputSpec {
            name: name.clone(),
            kind: decl.kind,
            values: decl.values.clone(),
            default: decl.default.clone(),
            description: decl.description.clone(),
        })
        .collect()
}

/// Check every declaration: its name, its type's extras and its default.
pub(crate) fn check(declared: &IndexMap<String, InputDecl>, ctx: &mut Ctx<'_>) {
    for spec in lower(declared) {
        let base = format!("/inputs/{}", escape_segment(&spec.name));
        if !is_identifier(&spec.name) {
            let d = ctx
                .at_key(
                    &codes::INPUT_DECLARATION,
                    &base,
                    format!("input name `{}` cannot be read in a template", spec.name),
                )
                .label("not an identifier")
                .hint("use letters, digits and `_`, starting with a letter (templates read `inputs.<name>`)");
            ctx.emit(d);
        }
        if spec.name == GOAL && (spec.kind != InputType::String || !spec.values.is_empty()) {
            let d = ctx
                .at(
                    &codes::INPUT_DECLARATION,
                    &format!("{base}/type"),
                    "the built-in input `goal` is always a string",
                )
                .label("cannot be retyped")
                .hint("declare `goal` only to describe it or give it a default; add another input for anything else");
            ctx.emit(d);
            continue;
        }
        match (spec.kind, spec.values.is_empty()) {
            (InputType::Enum, true) => {
                let d = ctx
                    .at(
                        &codes::INPUT_DECLARATION,
                        &format!("{base}/type"),
                        format!("enum input `{}` lists no values", spec.name),
                    )
                    .label("no values")
                    .hint("add `values: [first, second]`");
                ctx.emit(d);
                continue;
            }
            (kind, false) if kind != InputType::Enum => {
                let d = ctx
                    .at_key(
                        &codes::INPUT_DECLARATION,
                        &format!("{base}/values"),
                        format!(
                            "`values` applies only to `type: enum`; input `{}` is {}",
                            spec.name,
                            kind.as_str()
                        ),
                    )
                    .label("would be ignored")
                    .hint("write `type: enum`, or remove `values`");
                ctx.emit(d);
            }
            _ => {}
        }
        for (i, value) in spec.values.iter().enumerate() {
            if spec.values[..i].contains(value) {
                let d = ctx
                    .at(
                        &codes::INPUT_DECLARATION,
                        &format!("{base}/values/{i}"),
                        format!("value `{value}` is listed twice"),
                    )
                    .label("again");
                ctx.emit(d);
            }
        }
        if let Some(default) = &spec.default
            && let Err(why) = spec.accept(default)
        {
            let message = if spec.kind == InputType::Enum {
                format!("the default of input `{}`: {why}", spec.name)
            } else {
                format!(
                    "the default of input `{}` is not {}: {why}",
                    spec.name,
                    spec.type_words()
                )
            };
            let d = ctx
                .at(&codes::INPUT_DEFAULT, &format!("{base}/default"), message)
                .label("wrong type")
                .hint(
                    "give a default of the declared type, or remove it to make the input required",
                );
            ctx.emit(d);
        }
    }
}

/// Why `inputs.<name>…` is not there: the input is not declared (`goal` always is), or a field
/// is read off a plain value.
pub(crate) fn unknown_input(path: &str, inputs: &[String]) -> Option<String> {
    let mut segments = path.split('.').skip(1);
    let name = segments.next()?;
    if name != GOAL && !inputs.iter().any(|i| i == name) {
        let declared: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let hint = crate::pipeline::suggest::did_you_mean(name, declared.iter().copied())
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        return Some(if declared.is_empty() {
            format!("no input `{name}` is declared; declare it under `inputs:`")
        } else {
            format!(
                "no input `{name}` is declared (declared: {}){hint}",
                declared.join(", ")
            )
        });
    }
    segments
        .next()
        .map(|_| format!("`inputs.{name}` is a plain value with no fields"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: InputType, values: &[&str]) -> InputSpec {
        InputSpec {
            name: "x".into(),
            kind,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
            default: None,
            description: None,
        }
    }

    #[test]
    fn text_is_parsed_by_type() {
        assert_eq!(
            spec(InputType::Integer, &[]).parse("42"),
            Ok(Value::from(42))
        );
        assert!(spec(InputType::Integer, &[]).parse("abc").is_err());
        assert!(spec(InputType::Integer, &[]).parse("1.5").is_err());
        assert_eq!(
            spec(InputType::Number, &[]).parse("1.5"),
            Ok(serde_json::json!(1.5))
        );
        assert!(spec(InputType::Number, &[]).parse("NaN").is_err());
        assert_eq!(
            spec(InputType::Boolean, &[]).parse("true"),
            Ok(Value::Bool(true))
        );
        assert!(spec(InputType::Boolean, &[]).parse("yes").is_err());
        assert_eq!(
            spec(InputType::String, &[]).parse("a=b"),
            Ok(Value::from("a=b"))
        );
        let colour = spec(InputType::Enum, &["red", "green"]);
        assert_eq!(colour.parse("red"), Ok(Value::from("red")));
        let err = colour.parse("gren").unwrap_err();
        assert!(err.contains("did you mean `green`"), "{err}");
    }

    #[test]
    fn file_values_must_have_the_declared_type() {
        use serde_json::json;
        assert!(spec(InputType::Integer, &[]).accept(&json!(3)).is_ok());
        assert!(spec(InputType::Integer, &[]).accept(&json!(3.5)).is_err());
        assert!(spec(InputType::Integer, &[]).accept(&json!("3")).is_err());
        assert!(spec(InputType::Number, &[]).accept(&json!(3)).is_ok());
        let err = spec(InputType::String, &[]).accept(&json!(3)).unwrap_err();
        assert!(err.contains("quote it"), "{err}");
        assert!(
            spec(InputType::Boolean, &[])
                .accept(&json!([true]))
                .is_err()
        );
    }

    #[test]
    fn names_are_template_identifiers() {
        assert!(is_identifier("audience"));
        assert!(is_identifier("_x1"));
        assert!(!is_identifier("my-name"));
        assert!(!is_identifier("1x"));
        assert!(!is_identifier(""));
    }
}
