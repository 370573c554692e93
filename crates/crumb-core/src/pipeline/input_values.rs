//! Turning what a person gave — `--set name=value` texts and an `--input` file's map — into the
//! values of a pipeline's declared inputs: every value type-checked, unknown names refused with
//! a "did you mean", defaults filled in and missing required inputs named. Every problem is
//! collected, not just the first.

use indexmap::IndexMap;
use serde_json::Value;

use crate::pipeline::inputs::{GOAL, InputSpec, is_identifier};
use crate::pipeline::suggest;

/// One value given for an input, with where it came from (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// `--set name=text`: parsed according to the input's type.
    Text(String),
    /// A value from an `--input` file (YAML or JSON), or a batch entry's `set:`: typed already.
    Value(Value),
}

/// Why a given value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("unknown input `{name}` (from {origin}){hint}")]
    Unknown {
        name: String,
        origin: String,
        hint: String,
    },
    #[error("input `{name}` (from {origin}) must be {expected}: {why}")]
    WrongType {
        name: String,
        origin: String,
        expected: String,
        why: String,
    },
    #[error(
        "input `{name}` is required ({expected}{about}) and was not given; pass --set {name}=…"
    )]
    Missing {
        name: String,
        expected: String,
        about: String,
    },
    #[error(
        "`goal` (from {origin}) is the run's goal: give it as the positional argument (or --pitch-file)"
    )]
    Goal { origin: String },
}

/// A malformed `--set` argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    #[error("`{0}` is not NAME=VALUE")]
    NoEquals(String),
    #[error("`{0}` is not an input name (letters, digits and `_`, starting with a letter)")]
    BadName(String),
}

/// Split `name=value` at the first `=`; the value may be empty and may hold more `=`.
pub fn parse_set(text: &str) -> Result<(String, String), SetError> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| SetError::NoEquals(text.to_owned()))?;
    if !is_identifier(name) {
        return Err(SetError::BadName(name.to_owned()));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// The values of every declared input but `goal`, in declaration order: `given` (later entries
/// win), else the default. `given` holds `(name, value, origin)`.
pub fn resolve(
    specs: &[InputSpec],
    given: &[(String, Given, String)],
) -> Result<IndexMap<String, Value>, Vec<InputError>> {
    let mut errors = Vec::new();
    let mut chosen: IndexMap<String, Value> = IndexMap::new();
    for (name, value, origin) in given {
        if name == GOAL {
            errors.push(InputError::Goal {
                origin: origin.clone(),
            });
            continue;
        }
        let Some(spec) = specs.iter().find(|s| &s.name == name) else {
            let names = specs.iter().map(|s| s.name.as_str()).filter(|n| *n != GOAL);
            let declared: Vec<&str> = names.clone().collect();
            let hint = match suggest::did_you_mean(name, names) {
                Some(h) => format!("; {h}"),
                None if declared.is_empty() => "; this pipeline declares no inputs".to_owned(),
                None => format!("; declared: {}", declared.join(", ")),
            };
            errors.push(InputError::Unknown {
                name: name.clone(),
                origin: origin.clone(),
                hint,
            });
            continue;
        };
        let checked = match value {
            Given::Text(text) => spec.parse(text),
            Given::Value(value) => spec.accept(value),
        };
        match checked {
            Ok(value) => {
                chosen.insert(name.clone(), value);
            }
            Err(why) => errors.push(InputError::WrongType {
                name: name.clone(),
                origin: origin.clone(),
                expected: spec.type_words(),
                why,
            }),
        }
    }
    let mut out = IndexMap::new();
    for spec in specs.iter().filter(|s| s.name != GOAL) {
        if let Some(value) = chosen.shift_remove(&spec.name) {
            out.insert(spec.name.clone(), value);
        } else if let Some(default) = &spec.default {
            out.insert(spec.name.clone(), default.clone());
        } else if !given.iter().any(|(name, ..)| name == &spec.name) {
            // A value was given but refused: that error says enough.
            errors.push(InputError::Missing {
                name: spec.name.clone(),
                expected: spec.type_words(),
                about: spec
                    .description
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default(),
            });
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The goal's default, when the pipeline declares `goal` with one.
pub fn goal_default(specs: &[InputSpec]) -> Option<String> {
    specs
        .iter()
        .find(|s| s.name == GOAL)
        .and_then(|s| s.default.as_ref())
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::inputs::InputType;
    use proptest::prelude::*;
    use serde_json::json;

    fn specs() -> Vec<InputSpec> {
        let spec = |name: &str, kind, default: Option<Value>| InputSpec {
            name: name.into(),
            kind,
            values: if kind == InputType::Enum {
                vec!["short".into(), "long".into()]
            } else {
                Vec::new()
            },
            default,
            description: None,
        };
        vec![
            spec("audience", InputType::String, None),
            spec("count", InputType::Integer, Some(json!(3))),
            spec("length", InputType::Enum, Some(json!("short"))),
            spec(GOAL, InputType::String, None),
        ]
    }

    fn set(name: &str, text: &str) -> (String, Given, String) {
        (name.into(), Given::Text(text.into()), "--set".into())
    }

    #[test]
    fn defaults_fill_what_is_not_given_and_later_values_win() {
        let values = resolve(
            &specs(),
            &[
                (
                    "audience".into(),
                    Given::Value(json!("kids")),
                    "file".into(),
                ),
                set("audience", "engineers"),
                set("count", "7"),
            ],
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&values).unwrap(),
            json!({ "audience": "engineers", "count": 7, "length": "short" })
        );
    }

    #[test]
    fn every_problem_is_reported() {
        let errors = resolve(
            &specs(),
            &[set("count", "abc"), set("audiense", "x"), set("goal", "g")],
        )
        .unwrap_err();
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 4, "{text:#?}");
        assert!(
            text[0].contains("`count`") && text[0].contains("integer"),
            "{}",
            text[0]
        );
        assert!(text[1].contains("did you mean `audience`"), "{}", text[1]);
        assert!(text[2].contains("positional"), "{}", text[2]);
        assert!(text[3].contains("`audience` is required"), "{}", text[3]);
    }

    #[test]
    fn set_splits_at_the_first_equals() {
        assert_eq!(parse_set("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert_eq!(parse_set("a="), Ok(("a".into(), String::new())));
        assert!(matches!(parse_set("a"), Err(SetError::NoEquals(_))));
        assert!(matches!(parse_set("=x"), Err(SetError::BadName(_))));
        assert!(matches!(parse_set("my-x=1"), Err(SetError::BadName(_))));
    }

    proptest! {
        #[test]
        fn set_round_trips_any_name_and_value(name in "[A-Za-z_][A-Za-z0-9_]{0,20}", value in "\\PC{0,40}") {
            let text = format!("{name}={value}");
            prop_assert_eq!(parse_set(&text), Ok((name, value)));
        }

        #[test]
        fn set_never_panics_and_accepts_only_identifiers(text in "\\PC{0,60}") {
            if let Ok((name, value)) = parse_set(&text) {
                prop_assert!(is_identifier(&name));
                prop_assert_eq!(format!("{name}={value}"), text);
            }
        }

        #[test]
        fn integer_text_parses_exactly_when_it_is_an_i64(text in "-?[0-9]{1,22}|[a-z0-9.]{0,6}") {
            let spec = &specs()[1];
            prop_assert_eq!(spec.parse(&text).is_ok(), text.parse::<i64>().is_ok());
        }
    }
}
