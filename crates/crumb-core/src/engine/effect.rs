//! Effects: what the reducer asks the runtime to do. The reducer never does anything itself.
//!
//! Every effect carries a deterministic id, `<triggering event id>:<index>`, and every event the
//! runtime writes as the outcome of an effect carries that id in `metadata.effect_id`. On resume
//! the runtime replays the transcript, recomputes the effects, and re-issues exactly those whose id
//! appears in no event — nothing lost, nothing run twice.
//!
//! Outcome events, per effect:
//! - [`Spawn`]: the dispatcher writes `agent.wake` (from the role, `data.adapter`), the role then
//!   writes its own events, and the dispatcher writes `agent.stop` (usage in metadata). A spawn
//!   *succeeds* when the role emits one of its `produces` kinds. It *fails* when the dispatcher
//!   writes `error` with `from: system` and `data: {role, reason, effect_id}`, where `reason` is one
//!   of `exit_nonzero`, `timeout`, `idle_timeout`, `missing_binary`, `no_produces`. Only those
//!   two outcomes move the role's circuit breaker; wake/stop/notes never do.
//! - [`RunQa`]: `qa.result` from `system` with `parent_event_id` = the build event id. A result
//!   with `data.status: "error"` says the checks could not run (no browser, a launch or page
//!   timeout): the engine answers it with a retry, a new `RunQa` whose id derives from that
//!   `qa.result` like any effect's (`<qa.result id>:0`) and which carries `attempt` and
//!   `delay_ms`. So every attempt is its own effect with its own outcome event, and a resume
//!   re-issues exactly the attempt that has none, backoff included.
//! - [`Append`]: the draft itself (its `metadata.effect_id` is already set by the reducer).
//! - [`Done`]: `done` from `system` with `data.outcome` and `data.reason`, then `session.end`.
//! - [`Cancel`]: a `note` from `system` with `data: {cancelled: [...], reason}`.

use serde::Serialize;

use crate::transcript::Draft;
use crate::vocab::{Outcome, Severity, Verdict};

/// One thing the runtime must do.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Effect {
    Spawn(Spawn),
    RunQa(RunQa),
    Append(Append),
    Done(Done),
    Cancel(Cancel),
}

impl Effect {
    /// The effect's deterministic id.
    pub fn id(&self) -> &str {
        match self {
            Effect::Spawn(e) => &e.id,
            Effect::RunQa(e) => &e.id,
            Effect::Append(e) => &e.id,
            Effect::Done(e) => &e.id,
            Effect::Cancel(e) => &e.id,
        }
    }

    /// Whether this effect starts work (a spawn or a QA run) that a stop must suppress.
    pub fn starts_work(&self) -> bool {
        matches!(self, Effect::Spawn(_) | Effect::RunQa(_))
    }
}

/// Start one turn of a role.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spawn {
    pub id: String,
    /// The role to run (a role id of the table).
    pub role: String,
    /// Adapter override (from `/swap` or a circuit-breaker swap); `None` = the role's binding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// How many spawns of this role came before this one (the template's `attempt`).
    pub attempt: u32,
    /// Why the spawn happens.
    pub cause: SpawnCause,
    /// The verifier's (or a veto's) feedback for this spawn only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Feedback>,
    /// The person's messages aimed at this role since its last spawn, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interventions: Vec<Intervention>,
    /// Ids of the `user.*` events this spawn consumes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consumed_intervene_ids: Vec<String>,
}

/// What made the engine spawn a role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpawnCause {
    /// A route of the table.
    Route,
    /// A person's `/goto` or `@role` message.
    Goto,
    /// A person's `/veto`: the repair route.
    Veto,
    /// A person's `/answer` to what the session awaited: the `user.answer` route.
    Answer,
    /// The previous spawn of the role failed; same context again.
    Retry,
    /// The circuit opened and the role moved to its next fallback adapter.
    CircuitSwap,
    /// Released from the pause queue by `/resume`.
    Resume,
}

/// Feedback handed to exactly one spawn.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Feedback {
    /// The event it came from (`judge.score` or `user.veto`).
    pub source_event_id: String,
    /// The corrected verdict that caused the repair (`FAIL` for a veto).
    pub verdict: Verdict,
    pub severity: Severity,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_change: Option<String>,
}

/// A person's message for one role (or all roles).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Intervention {
    /// The `user.*` event it came from.
    pub event_id: String,
    pub text: String,
}

/// Run the pipeline's QA checks against a build.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunQa {
    pub id: String,
    /// The `build` event being checked; the `qa.result` names it in `parent_event_id`.
    pub build_event_id: String,
    /// The pipeline's QA entry point, relative to `artifacts/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The acceptance predicates of the latest plan (`data.ac_predicates`), as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ac_predicates: Vec<serde_json::Value>,
    /// 0 for a first run; n for the n-th retry of a run that could not run.
    #[serde(skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// How long the runtime waits before running it (a retry's backoff).
    #[serde(skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// Append an event the engine composed (ack, audit, hook, awaiting marker, `/ask` answer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Append {
    pub id: String,
    /// Boxed: drafts are large and appends are rare next to the events that cause them.
    pub draft: Box<Draft>,
}

/// End the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Done {
    pub id: String,
    /// What the session's exit code follows.
    pub outcome: Outcome,
    /// What the `done` event records, e.g. `verdict_pass`, `too_many_verify`, `circuit_open:builder`.
    pub reason: String,
}

/// Stop live spawns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cancel {
    pub id: String,
    /// A role id, or `None` for every live spawn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub reason: String,
}
