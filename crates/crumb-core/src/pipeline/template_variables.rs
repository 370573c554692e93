//! The variables a role's prompt template may use, and the shape of each.
//!
//! The runtime renders every template with exactly these names (strict undefined), and
//! `crumb validate` checks every use against this table down to the field
//! (`{{ feedback.txt }}` is `crumb::unknown-template-variable`), then renders each template once
//! against [`sample`] under `TEMPLATE_FUEL` and `TEMPLATE_RECURSION_LIMIT`. Keeping the table
//! here makes both sides agree.

use serde_json::{Map, Value, json};

use crate::pipeline::kinds::Slot;

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
    /// A map with any keys; each value has this shape.
    Map(&'static Shape),
    /// A map keyed by event kind, holding only the kinds the role sees; values have this shape.
    KindMap(&'static Shape),
    /// A map keyed by role id; values have this shape.
    RoleMap(&'static Shape),
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
    Shape::Record(&[("by_kind", Shape::KindMap(&OUTPUT)), ("by_role", Shape::RoleMap(&OUTPUT))]);

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

/// What fills an event-built variable: the latest event of a slot's kinds, or of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filler {
    Slot(Slot),
    Kind(&'static str),
}

/// The top-level variables built from events, and what fills each. A role whose `sees:` names
/// none of a variable's filling kinds does not get that variable at all: it is absent from the
/// context (not `none`), and `crumb validate` refuses a template that reads it unguarded.
/// `outputs.by_kind` and `outputs.by_role` hold only the kinds the role sees. Every other
/// variable (goal, role, pipeline, session, feedback, interventions, attempt, inputs) always
/// reaches every role.
pub const EVENT_BUILT: &[(&str, Filler)] = &[
    ("spec", Filler::Slot(Slot::Plan)),
    ("build", Filler::Slot(Slot::Build)),
    ("qa", Filler::Kind("qa.result")),
    ("verdict", Filler::Kind("judge.score")),
];

/// One role's view of the prompt context: what its `sees:` lets in. The runtime renders with
/// [`RoleView::restrict`]ed contexts, validation checks templates against [`RoleView::unseen`],
/// and the language server completes from [`RoleView::sample`]: one description for all three.
#[derive(Debug, Clone, Copy)]
pub struct RoleView<'a> {
    /// The role's `sees:` (empty: everything public).
    sees: &'a [String],
    /// The pipeline's kind → slot list (`kinds::lower`).
    slots: &'a [(String, Slot)],
}

impl<'a> RoleView<'a> {
    pub fn new(sees: &'a [String], slots: &'a [(String, Slot)]) -> Self {
        RoleView { sees, slots }
    }

    /// Whether events of `kind` reach this role's context.
    pub fn sees_kind(&self, kind: &str) -> bool {
        self.sees.is_empty() || self.sees.iter().any(|seen| seen == kind)
    }

    /// The kinds that would fill the top-level variable `name` when this role sees none of them
    /// (the variable is absent from its context); `None` when the role gets it.
    pub fn unseen(&self, name: &str) -> Option<Vec<String>> {
        if self.sees.is_empty() {
            return None;
        }
        let (_, filler) = EVENT_BUILT.iter().find(|(n, _)| *n == name)?;
        let kinds: Vec<String> = match filler {
            Filler::Slot(slot) => self
                .slots
                .iter()
                .filter(|(_, s)| s == slot)
                .map(|(kind, _)| kind.clone())
                .collect(),
            Filler::Kind(kind) => vec![(*kind).to_owned()],
        };
        (!kinds.iter().any(|kind| self.sees_kind(kind))).then_some(kinds)
    }

    /// Whether the top-level variable `name` is in this role's context.
    pub fn shows(&self, name: &str) -> bool {
        self.unseen(name).is_none()
    }

    /// Remove from a rendering context what this role does not see: the event-built variables
    /// it sees no kind of, and the `outputs.by_kind` entries of kinds it does not see.
    pub fn restrict(&self, context: &mut Value) {
        let Some(object) = context.as_object_mut() else {
            return;
        };
        object.retain(|name, _| self.shows(name));
        if let Some(by_kind) = object
            .get_mut("outputs")
            .and_then(|o| o.get_mut("by_kind"))
            .and_then(Value::as_object_mut)
        {
            by_kind.retain(|kind, _| self.sees_kind(kind));
        }
    }

    /// [`sample`] as this role sees it.
    pub fn sample(&self, kinds: &[&str], roles: &[&str]) -> Value {
        let mut out = sample(kinds, roles);
        self.restrict(&mut out);
        out
    }
}

/// Most instructions one render may run: far above any prompt (a few thousand), far below a
/// runaway loop. The runtime uses the same limit, so what validates also renders.
pub(crate) const TEMPLATE_FUEL: u64 = 2_000_000;

/// Deepest include/macro nesting a render may reach.
pub(crate) const TEMPLATE_RECURSION_LIMIT: usize = 64;

/// The shape of the top-level variable `name`.
pub(crate) fn shape_of(name: &str) -> Option<Shape> {
    PROVIDED_VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

/// The shape of field `segment` of a value of shape `shape` (shown as `at`), or why it has none.
/// Keys of the maps are not checked here (a kind's visibility is the caller's business).
pub(crate) fn field_of(shape: Shape, at: &str, segment: &str) -> Result<Shape, String> {
    match shape {
        Shape::Record(fields) => fields
            .iter()
            .find(|(n, _)| *n == segment)
            .map(|(_, s)| *s)
            .ok_or_else(|| {
                let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
                format!(
                    "`{at}` has no field `{segment}`; its fields: {}",
                    names.join(", ")
                )
            }),
        Shape::Texts(fields) => {
            if fields.contains(&segment) {
                Ok(Shape::Text)
            } else {
                Err(format!(
                    "`{at}` has no field `{segment}`; its fields: {}",
                    fields.join(", ")
                ))
            }
        }
        Shape::Map(values) | Shape::KindMap(values) | Shape::RoleMap(values) => Ok(*values),
        Shape::Any => Ok(Shape::Any),
        Shape::List(_) => Err(format!("`{at}` is a list; loop over it or index it")),
        Shape::Text | Shape::Number | Shape::Bool => {
            Err(format!("`{at}` is a plain value with no fields"))
        }
    }
}

/// Why the dotted path `a.b.c` does not exist in the context, or `None` when it does.
#[cfg(test)]
fn missing_field(path: &str) -> Option<String> {
    let mut segments = path.split('.');
    let top = segments.next()?;
    let mut shape = shape_of(top)?;
    let mut at = top.to_string();
    for segment in segments {
        shape = match field_of(shape, &at, segment) {
            Ok(s) => s,
            Err(why) => return Some(why),
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
        Shape::Map(values) | Shape::KindMap(values) | Shape::RoleMap(values) => {
            let keys = match shape {
                Shape::RoleMap(_) => roles,
                Shape::KindMap(_) => kinds,
                _ => &[],
            };
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
