//! Declared artifact kinds: which of the kinds a pipeline's roles exchange fill the engine's two
//! slots — the *plan* (the first sets it; each later one is a re-plan, counted against
//! `limits.max_respec`; its `data.acceptance_criteria`/`ac_predicates` go to QA) and the *build*
//! (each one counts as rework for `source: rework` dimensions; its provider feeds the
//! same-provider guard; QA runs on it). The engine reads only the slot, never a kind's name.
//!
//! A pipeline without `kinds:` gets [`default_kinds`] (`spec`/`spec.update` → plan, `build` →
//! build), kept here as data.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One declared kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KindDecl {
    /// The engine slot this kind fills.
    pub slot: Slot,
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
pub fn default_kinds() -> IndexMap<String, KindDecl> {
    [
        ("spec", Slot::Plan),
        ("spec.update", Slot::Plan),
        ("build", Slot::Build),
    ]
    .into_iter()
    .map(|(kind, slot)| (kind.to_owned(), KindDecl { slot }))
    .collect()
}

/// The table's kind → slot list: the declared kinds, else [`default_kinds`].
pub fn lower(declared: Option<&IndexMap<String, KindDecl>>) -> Vec<(String, Slot)> {
    declared
        .cloned()
        .unwrap_or_else(default_kinds)
        .into_iter()
        .map(|(kind, decl)| (kind, decl.slot))
        .collect()
}

/// Kinds the engine itself acts on (the fixed core), which no declaration may reassign.
pub const CORE_KINDS: &[&str] = &[
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
    "user.pause",
    "user.resume",
    "session.awaiting",
    "hook",
    "audit",
    "ack",
];
