//! The variables a role's prompt template may use, and the shape of each.
//!
//! The runtime renders every template with exactly these names (strict undefined), and
//! `crumb validate` checks every use against this table down to the field
//! (`{{ feedback.txt }}` is `crumb::unknown-template-variable`), then renders each template once
//! against [`sample`] under `TEMPLATE_FUEL` and `TEMPLATE_RECURSION_LIMIT`. Keeping the table
//! here makes both sides agree.

use serde_json::{Map, Value, json};

/// What a template value holds, as deep as validation can check it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    Text,
    Number,
    Bool,
    /// A list; its items have this shape.
    List(&'static Shape),
    /// A record with exactly these fields.
    Record(&'static [(&'static str, Shape)]),
    /// A record whose fields are all text.
    Texts(&'static [&'static str]),
    /// A map with any keys (event kinds, role ids); each value has this shape.
    Map(&'static Shape),
    /// Whatever an agent wrote (an event's `data`): fields are not checked.
    Any,
}

const TEXT: Shape = Shape::Text;
const NUMBER: Shape = Shape::Number;
const LIST: Shape = Shape::List(&Shape::Text);

/// The latest event of one kind or from one role, in `outputs`.
#[rustfmt::skip]
const OUTPUT: Shape =
    Shape::Record(&[("kind", TEXT), ("from", TEXT), ("body", TEXT), ("data", Shape::Any)]);
/// One QA check's result; the tails are the end of a command check's output.
const CHECK: Shape = Shape::Texts(&["id", "status", "summary", "stdout_tail", "stderr_tail"]);
const PREDICATE: Shape = Shape::Texts(&["id", "intent", "predicate"]);
/// One dimension of the pipeline's rubric (`source`: judge, qa or rework).
#[rustfmt::skip]
const DIMENSION: Shape = Shape::Record(&[
    ("id", TEXT), ("label", TEXT), ("scale", NUMBER), ("weight", NUMBER), ("source", TEXT),
]);

/// This role.
const ROLE: Shape = Shape::Record(&[("id", TEXT), ("produces", LIST), ("description", TEXT)]);
/// The pipeline's name, roles and scoring thresholds.
#[rustfmt::skip]
const PIPELINE: Shape = Shape::Record(&[
    ("name", TEXT), ("description", TEXT), ("roles", LIST),
    ("pass_at", NUMBER), ("partial_at", NUMBER), ("rubric", Shape::List(&DIMENSION)),
]);
/// Paths of the session.
const SESSION: Shape = Shape::Texts(&["id", "dir", "artifacts_dir", "transcript_path"]);
/// `spec`: the plan slot's latest (a kind declared `slot: plan`), or none.
#[rustfmt::skip]
const SPEC: Shape = Shape::Record(&[
    ("body", TEXT), ("acceptance_criteria", LIST), ("ac_predicates", Shape::List(&PREDICATE)),
]);
/// `build`: the build slot's latest (a kind declared `slot: build`), or none.
const BUILD: Shape = Shape::Record(&[("body", TEXT), ("artifacts", LIST)]);
/// The latest QA result, or none.
#[rustfmt::skip]
const QA: Shape = Shape::Record(&[
    ("exec_exit_code", NUMBER), ("passed", Shape::Bool),
    ("findings", LIST), ("checks", Shape::List(&CHECK)),
]);
/// The latest corrected verdict, or none.
#[rustfmt::skip]
const VERDICT: Shape = Shape::Record(&[
    ("verdict", TEXT), ("aggregate", NUMBER), ("scores", Shape::List(&NUMBER)), ("audit", LIST),
]);
/// The last verdict's feedback routed to this spawn (`with: feedback`), or none.
const FEEDBACK: Shape = Shape::Texts(&["text", "suggested_change", "severity"]);
/// Prior outputs: the latest of each kind and of each role (a key is absent until written).
#[rustfmt::skip]
const OUTPUTS: Shape =
    Shape::Record(&[("by_kind", Shape::Map(&OUTPUT)), ("by_role", Shape::Map(&OUTPUT))]);

/// Top-level template variables the engine provides, and their shapes. `goal` is clipped at
/// 8 KiB (`goal_truncated` says so); `interventions` are the person's messages aimed at this
/// role since its last spawn; `attempt` counts this role's earlier spawns from 0; `inputs` holds
/// the run's declared inputs and `goal` (names are checked against the pipeline's `inputs:`).
#[rustfmt::skip]
pub(crate) const PROVIDED_VARIABLES: &[(&str, Shape)] = &[
    ("goal", TEXT), ("goal_truncated", Shape::Bool), ("role", ROLE), ("pipeline", PIPELINE),
    ("session", SESSION), ("spec", SPEC), ("build", BUILD), ("qa", QA), ("verdict", VERDICT),
    ("feedback", FEEDBACK), ("outputs", OUTPUTS), ("interventions", LIST), ("attempt", NUMBER),
    ("inputs", Shape::Map(&Shape::Any)),
];

/// Most instructions one render may run: far above any prompt (a few thousand), far below a
/// runaway loop. The runtime uses the same limit, so what validates also renders.
pub(crate) const TEMPLATE_FUEL: u64 = 2_000_000;

/// Deepest include/macro nesting a render may reach.
pub(crate) const TEMPLATE_RECURSION_LIMIT: usize = 64;

/// Whether `name` is a variable templates may use.
pub(crate) fn is_provided(name: &str) -> bool {
    shape_of(name).is_some()
}

/// The shape of the top-level variable `name`.
pub(crate) fn shape_of(name: &str) -> Option<Shape> {
    PROVIDED_VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

/// Why the dotted path `a.b.c` does not exist in the context, or `None` when it does.
/// The first segment must already be a provided variable.
pub(crate) fn missing_field(path: &str) -> Option<String> {
    let mut segments = path.split('.');
    let top = segments.next()?;
    let mut shape = shape_of(top)?;
    let mut at = top.to_string();
    for segment in segments {
        shape = match shape {
            Shape::Record(fields) => {
                let Some((_, s)) = fields.iter().find(|(n, _)| *n == segment) else {
                    let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
                    return Some(format!(
                        "`{at}` has no field `{segment}`; its fields: {}",
                        names.join(", ")
                    ));
                };
                *s
            }
            Shape::Texts(fields) => {
                if !fields.contains(&segment) {
                    return Some(format!(
                        "`{at}` has no field `{segment}`; its fields: {}",
                        fields.join(", ")
                    ));
                }
                Shape::Text
            }
            Shape::Map(values) => *values,
            Shape::Any => return None,
            Shape::List(_) => return Some(format!("`{at}` is a list; loop over it")),
            Shape::Text | Shape::Number | Shape::Bool => {
                return Some(format!("`{at}` is a plain value with no fields"));
            }
        };
        at = format!("{at}.{segment}");
    }
    None
}

/// A context with every variable present and every list holding one item, for rendering each
/// template once at validate time. `kinds` and `roles` are the map keys `outputs` offers.
pub fn sample(kinds: &[&str], roles: &[&str]) -> Value {
    let mut out = Map::new();
    for (name, shape) in PROVIDED_VARIABLES {
        out.insert((*name).to_string(), sample_of(*shape, name, kinds, roles));
    }
    Value::Object(out)
}

fn sample_of(shape: Shape, name: &str, kinds: &[&str], roles: &[&str]) -> Value {
    match shape {
        Shape::Text => json!(format!("sample {name}")),
        Shape::Number => json!(1),
        Shape::Bool => json!(true),
        Shape::Any => json!({}),
        Shape::List(item) => json!([sample_of(*item, name, kinds, roles)]),
        Shape::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|(n, s)| ((*n).to_string(), sample_of(*s, n, kinds, roles)))
                .collect(),
        ),
        Shape::Texts(fields) => Value::Object(
            fields
                .iter()
                .map(|f| ((*f).to_string(), json!(format!("sample {f}"))))
                .collect(),
        ),
        Shape::Map(values) => {
            let keys = if name == "by_role" { roles } else { kinds };
            Value::Object(
                keys.iter()
                    .map(|k| ((*k).to_string(), sample_of(*values, k, kinds, roles)))
                    .collect(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_paths_are_checked_against_the_shape() {
        assert_eq!(missing_field("feedback.text"), None);
        assert_eq!(missing_field("outputs.by_kind.spec.body"), None);
        assert_eq!(missing_field("qa.checks"), None);
        assert!(
            missing_field("feedback.txt")
                .is_some_and(|m| m.contains("`feedback` has no field `txt`"))
        );
        assert!(missing_field("spec.bdy").is_some());
        assert!(missing_field("goal.x").is_some());
        assert!(missing_field("outputs.by_kind.spec.bdy").is_some());
    }

    #[test]
    fn the_sample_has_every_variable() {
        let sample = sample(&["spec"], &["writer"]);
        for (name, _) in PROVIDED_VARIABLES {
            assert!(sample.get(*name).is_some(), "{name}");
        }
        assert_eq!(sample["outputs"]["by_kind"]["spec"]["body"], "sample body");
        assert!(sample["outputs"]["by_role"]["writer"].is_object());
    }
}
