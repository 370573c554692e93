//! Role authority: which event kinds a role may write.
//!
//! A role may write exactly the kinds it declares in `produces`, plus the small [`COMMON`] set
//! every agent may use to talk. Verdict kinds are declared the same way: a role judges exactly
//! when `judge.score` is in its `produces`. Everything else — goals, usage, budgets, QA results,
//! `done`, person commands — belongs to the runner or to a person. `crumb event` (the firewall),
//! `crumb validate` (a route `from` a role that cannot produce its kind) and the reducer (defence
//! in depth against an agent that appends to the transcript file directly) all ask this module,
//! so the three can never disagree.

use crate::transcript::Kind;

/// Kinds every role may write besides its `produces`: a note to the others and a summary of its
/// reasoning. Neither is acted on unless a route says so. `artifact.created` is not here: it stays
/// the runner's (agents list files in their `produces` event's `artifacts`).
pub const COMMON: [Kind; 2] = [Kind::Note, Kind::AgentThoughtSummary];

/// Kinds the runner writes *on behalf of* a role (with `from: <role>`): spawn start and stop
/// (which carries the adapter's usage tap) and the tool calls its stream tap observes. Agents
/// cannot write them through `crumb event` (they are runner-owned or refused there), but the
/// reducer must accept them from a role.
pub(crate) const ON_BEHALF: [Kind; 4] = [
    Kind::AgentWake,
    Kind::AgentStop,
    Kind::ToolCall,
    Kind::ToolResult,
];

/// Whether a role declaring `produces` may write `kind` itself (through `crumb event`). A
/// runner-owned kind never, even when a pipeline lists it in `produces`.
/// Two aliases come with their kind: `spec.update` fills the same slot as `spec`, so a role that
/// produces `spec` may revise it, and a judge may write the legacy `verify.result` (recorded,
/// never routed).
pub fn may_write<S: AsRef<str>>(produces: &[S], kind: Kind) -> bool {
    let declared = match kind {
        Kind::SpecUpdate => Kind::Spec,
        Kind::VerifyResult => Kind::JudgeScore,
        other => other,
    };
    if kind.is_runner_owned() {
        return false;
    }
    COMMON.contains(&kind)
        || produces
            .iter()
            .any(|p| p.as_ref() == kind.as_str() || p.as_ref() == declared.as_str())
}

/// Whether the engine acts on an event of `kind` whose `from` is a role declaring `produces`:
/// what the role may write, plus what the runner writes on its behalf.
pub(crate) fn accepts_from_role<S: AsRef<str>>(produces: &[S], kind: Kind) -> bool {
    ON_BEHALF.contains(&kind) || may_write(produces, kind)
}

/// Whether a metadata key is set only by the runner: provenance markers and usage. Token counts
/// come only from the adapter's usage tap (the dispatcher's `agent.stop`), never from what an
/// agent claims.
pub fn is_runner_metadata(key: &str) -> bool {
    matches!(
        key,
        "deterministic" | "tool" | "effect_id" | "audit_violations" // provenance
            | "tokens_in" | "tokens_out" | "thinking_tokens" | "cache_read" | "cache_write"
            | "cost_usd" | "latency_ms" // usage
    )
}

/// One line for `crumb explain <kind>`: who may write it.
pub fn describe(kind: Kind) -> String {
    let common = COMMON
        .iter()
        .map(Kind::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if COMMON.contains(&kind) {
        format!(
            "Authority: a common kind: every role may write it besides its `produces` (the common kinds are {common})."
        )
    } else if kind.is_runner_owned() {
        "Authority: the runner's alone; `crumb event` refuses it from agents (exit 2, one audit) and the engine ignores it from a role.".to_owned()
    } else {
        let judges = if kind == Kind::JudgeScore {
            " A role judges exactly when `judge.score` is in its `produces`."
        } else {
            ""
        };
        format!(
            "Authority: a role may write it only when its `produces` lists it; besides those, every role may write the common kinds ({common}).{judges}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builder_may_write_build_and_the_common_kinds_only() {
        let produces = ["build"];
        assert!(may_write(&produces, Kind::Build));
        assert!(may_write(&produces, Kind::Note));
        assert!(may_write(&produces, Kind::AgentThoughtSummary));
        for kind in [
            Kind::JudgeScore,
            Kind::Goal,
            Kind::Spec,
            Kind::ArtifactCreated,
        ] {
            assert!(!may_write(&produces, kind), "{kind}");
        }
        assert!(accepts_from_role(&produces, Kind::AgentStop));
        assert!(!may_write(&produces, Kind::AgentStop));
    }

    #[test]
    fn a_planner_may_revise_its_spec() {
        assert!(may_write(&["spec"], Kind::SpecUpdate));
        assert!(!may_write(&["build"], Kind::SpecUpdate));
    }

    #[test]
    fn no_common_kind_is_runner_owned() {
        assert!(COMMON.iter().all(|k| !k.is_runner_owned()));
    }
}
