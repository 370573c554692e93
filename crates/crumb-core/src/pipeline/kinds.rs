//! Declared artifact kinds: which of the kinds a pipeline's roles exchange fill the engine's two
//! slots — the *plan* (the first sets it; each later one is a re-plan, counted against
//! `limits.max_respec`; its `data.acceptance_criteria`/`ac_predicates` go to QA) and the *build*
//! (each one counts as rework for `source: rework` dimensions; its provider feeds the
//! same-provider guard; QA runs on it). The engine reads only the slot, never a kind's name.
//!
//! A pipeline without `kinds:` gets `default_kinds` (`spec`/`spec.update` → plan, `build` →
//! build), kept here as data.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One declared kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KindDecl {
    /// The engine slot this kind fills, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<Slot>,
    /// A JSON Schema (draft 7) the event's `data` must satisfy: `crumb event` refuses an event
    /// of this kind whose `data` does not (absent `data` is checked as `null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
}

/// What the engine does with a declared kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// The plan: the first sets it, each later one is a re-plan (`limits.max_respec`); a plan
    /// kind without a route of its own takes the route of the first plan kind that has one.
    Plan,
    /// The build: counted as rework, its provider compared with the judge's, QA's subject.
    Build,
}

/// The kinds of a pipeline that declares none.
pub(crate) fn default_kinds() -> IndexMap<String, KindDecl> {
    [
        ("spec", Slot::Plan),
        ("spec.update", Slot::Plan),
        ("build", Slot::Build),
    ]
    .into_iter()
    .map(|(kind, slot)| {
        (
            kind.to_owned(),
            KindDecl {
                slot: Some(slot),
                schema: None,
            },
        )
    })
    .collect()
}

/// The table's kind → slot list: the declared kinds, else `default_kinds`.
pub fn lower(declared: Option<&IndexMap<String, KindDecl>>) -> Vec<(String, Slot)> {
    declared
        .cloned()
        .unwrap_or_else(default_kinds)
        .into_iter()
        .filter_map(|(kind, decl)| decl.slot.map(|slot| (kind, slot)))
        .collect()
}

/// The declared names outside the transcript vocabulary (a pipeline's own kinds), in order.
pub(crate) fn declared_names(declared: Option<&IndexMap<String, KindDecl>>) -> Vec<String> {
    declared
        .into_iter()
        .flatten()
        .filter(|(kind, _)| crate::transcript::DeclaredKind::new(kind).is_ok())
        .map(|(kind, _)| kind.clone())
        .collect()
}

/// Each declared kind's `data` schema, for `crumb event` (through the session's authority record).
pub fn schemas(
    declared: Option<&IndexMap<String, KindDecl>>,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    declared
        .into_iter()
        .flatten()
        .filter_map(|(kind, decl)| decl.schema.clone().map(|schema| (kind.clone(), schema)))
        .collect()
}

/// Kinds the engine itself acts on (the fixed core), which no declaration may reassign.
pub(crate) const CORE_KINDS: &[&str] = &[
    "session.start",
    "session.end",
    "goal",
    "agent.wake",
    "agent.stop",
    "judge.score",
    "qa.result",
    "done",
    "error",
    "user.intervene",
    "user.veto",
    "user.approve",
    "user.answer",
    "user.pause",
    "user.resume",
    "session.awaiting",
    "hook",
    "audit",
    "ack",
];
