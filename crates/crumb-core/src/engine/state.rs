//! The engine's state: everything the routes, limits and commands need, derived only from the
//! transcript.
//!
//! It stays O(1)-sized per event: latest snapshots instead of histories (the latest plan, build and
//! QA result, the last two verdicts), counters, per-role records and bounded queues. Maps are
//! `BTreeMap`s so the serialised JSON has a deterministic order: replaying the same transcript twice
//! gives byte-identical state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::effect::{Feedback, Intervention, SpawnCause};
use super::guards::{Correction, RawScores, Scorecard};
pub use crate::transcript::clip::clip;
use crate::vocab::{Outcome, Severity, Verdict};

/// Longest text kept from a body, feedback or intervention (bytes, cut at a char boundary).
pub const MAX_TEXT: usize = 8 * 1024;
/// Most interventions waiting for one role; older ones are dropped first.
pub(crate) const MAX_PENDING_INTERVENTIONS: usize = 32;
/// Most acceptance criteria, predicates or artifacts kept from one event.
pub(crate) const MAX_LIST: usize = 256;
/// Longest preview of a body kept for `/ask` and `crumb status`.
pub(crate) const PREVIEW: usize = 120;

/// The folded transcript.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// `session_id` of the first event.
    pub session_id: Option<String>,
    /// Events folded so far.
    pub events: u64,
    /// The most recent event (a summary, not the event).
    pub last_event: Option<EventSummary>,
    /// Session time, from event timestamps only.
    pub clock: Clock,
    /// The goal's text.
    pub goal: Option<String>,
    /// The plan slot's latest snapshot (a kind the pipeline declares `slot: plan`).
    pub plan: Option<PlanSnapshot>,
    /// The build slot's latest snapshot (a kind the pipeline declares `slot: build`).
    pub build: Option<BuildSnapshot>,
    pub qa: Option<QaSnapshot>,
    pub verification: Verification,
    pub budgets: Budgets,
    /// Per role of the table, keyed by role id.
    pub roles: BTreeMap<String, RoleState>,
    /// The role spawned (or queued) most recently.
    pub next_role: Option<String>,
    /// Global pause: every spawn is queued.
    pub paused: bool,
    /// Set while a route waits for a person (`await: human`).
    pub awaiting: Option<Awaiting>,
    /// Set once the session reached a terminal state.
    pub done: Option<Terminal>,
    /// Events of kinds no route, command or bookkeeping uses (counted, not kept).
    pub unrouted_events: u64,
    /// Events the engine refused to act on: a role writing a kind it may not write, or a `goal`
    /// not from the person or the runner (see `pipeline::role_authority`).
    pub refused_events: u64,
    /// `verify.result` events: recorded, never counted as verifications.
    pub verify_aliases: u64,
    /// The latest fan-out (`spawn: [a, b]`) and what its branches reported, until a newer one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out: Option<FanOut>,
    /// Fires of each route that declares `max:`, keyed by its index in the table.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub route_fires: BTreeMap<usize, u32>,
    /// Each role's adapter as `session.start` bound it (what a swap moves away from).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bound_adapters: BTreeMap<String, String>,
    /// Adapter swaps, oldest first (at most `MAX_LIST`): a session with any is degraded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swaps: Vec<Swap>,
    /// Spawns decided by an event of a turn still running: they start when that turn's
    /// `agent.stop` is folded, so the budgets they are checked against include its usage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<DeferredSpawn>,
}

/// A spawn waiting for the end of the turn whose event decided it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeferredSpawn {
    /// The role whose running turn decided the spawn.
    pub after: String,
    /// The role to spawn.
    pub role: String,
    pub context: SpawnContext,
}

/// Roles spawned together by one route, and the verdicts their branches reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FanOut {
    /// The event whose route spawned the branches.
    pub event_id: String,
    /// Index of that route in the table.
    pub route: usize,
    pub roles: Vec<String>,
    /// In transcript order, at most one per role.
    pub results: Vec<BranchResult>,
    /// The combined verdict, once the join fired (later branches are recorded, never routed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined: Option<Joined>,
}

/// What a join made of its branches: the one verdict the verdict routes acted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Joined {
    pub verdict: Verdict,
    pub severity: Severity,
    pub aggregate: f64,
    /// The declared rule (`all_pass`, `majority`, `mean`, `min`).
    pub combine: String,
    /// The branches the join combined, in the order they reported.
    pub branches: Vec<BranchResult>,
}

/// One branch's corrected verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchResult {
    pub role: String,
    pub event_id: String,
    pub verdict: Verdict,
    pub severity: Severity,
    pub aggregate: f64,
    pub feedback: String,
}

/// One role moved to another adapter, by the circuit breaker or a person's `/swap`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Swap {
    pub role: String,
    /// The adapter the role was running (`None` when neither a binding nor a swap said).
    pub from: Option<String>,
    pub to: String,
    /// `circuit_open` (its own adapter kept failing) or `person` (`/swap`).
    pub cause: String,
}

/// The adapter that stands in for agents with a placeholder artifact, never the real work.
pub const MOCK_ADAPTER: &str = "mock";

impl State {
    /// Whether some role ran on another adapter than the one it was bound to.
    pub fn degraded(&self) -> bool {
        !self.swaps.is_empty()
    }

    /// The first role moved from a real adapter to `mock`, by the circuit breaker or by a
    /// person's `/swap`: its artifact is the mock's placeholder, so the session cannot pass.
    pub fn degraded_to_mock(&self) -> Option<&str> {
        self.swaps
            .iter()
            .find(|s| s.to == MOCK_ADAPTER && s.from.as_deref() != Some(MOCK_ADAPTER))
            .map(|s| s.role.as_str())
    }

    /// The adapter `role` runs on now: its swap override, else its binding.
    pub(crate) fn current_adapter(&self, role: &str) -> Option<String> {
        self.roles
            .get(role)
            .and_then(|r| r.adapter.clone())
            .or_else(|| self.bound_adapters.get(role).cloned())
    }

    /// Record a swap (bounded; the earliest swaps are the ones that explain a degraded run).
    pub(crate) fn record_swap(&mut self, role: &str, to: &str, cause: &str) {
        let from = self.current_adapter(role);
        if self.swaps.len() < MAX_LIST {
            self.swaps.push(Swap {
                role: role.to_owned(),
                from,
                to: to.to_owned(),
                cause: cause.to_owned(),
            });
        }
    }
}

impl State {
    /// The record of `role`, created on first use (without allocating when it exists).
    pub(crate) fn role_mut(&mut self, role: &str) -> &mut RoleState {
        if !self.roles.contains_key(role) {
            self.roles.insert(role.to_owned(), RoleState::default());
        }
        self.roles
            .get_mut(role)
            .expect("the role record was just ensured")
    }
}

/// A short summary of an event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventSummary {
    pub id: String,
    pub ts: String,
    pub from: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// Session time from event timestamps (never the wall clock of the machine replaying).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    /// `ts` of the first event with a valid timestamp.
    pub(crate) started_at: Option<String>,
    /// Milliseconds since the Unix epoch of `started_at`.
    pub(crate) started_ms: Option<i64>,
    /// Latest event time seen (timestamps that go backwards never shorten the session).
    pub latest_ms: Option<i64>,
    /// Events whose `ts` did not parse.
    pub(crate) bad_timestamps: u64,
    /// A fork's fork point (`session.start`'s `data.fork.at`) until it is folded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fork_at: Option<String>,
    /// The fork point was the last event folded: the gap to the next one is not session time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) after_fork_point: bool,
    /// Time left out: between a fork's last inherited event and its own first, which can be days
    /// (a fork of last week's session must not start out of wall-clock budget).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) excluded_ms: u64,
}

impl Clock {
    /// Elapsed session time in milliseconds.
    pub fn elapsed_ms(&self) -> u64 {
        match (self.started_ms, self.latest_ms) {
            (Some(start), Some(latest)) => u64::try_from(latest.saturating_sub(start))
                .unwrap_or(0)
                .saturating_sub(self.excluded_ms),
            _ => 0,
        }
    }
}

/// The latest plan (an event of a kind the pipeline declares `slot: plan`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanSnapshot {
    pub event_id: String,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    pub acceptance_criteria: Vec<String>,
    /// `data.ac_predicates` as written (handed to QA).
    pub ac_predicates: Vec<serde_json::Value>,
}

/// The latest build.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildSnapshot {
    pub event_id: String,
    pub from: String,
    /// `metadata.provider` of the build (for the same-provider guard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub artifacts: Vec<String>,
}

/// The latest `qa.result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QaSnapshot {
    pub event_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_event_id: Option<String>,
    /// `data.exec_exit_code`; `None` when absent or not an integer (counts as failed).
    pub exec_exit_code: Option<i64>,
    pub(crate) ac_passed: u32,
    pub ac_failed: u32,
    pub(crate) ac_skipped: u32,
    /// `data.status` was `error`: the checks could not run, so the result says nothing about
    /// the build (never a pass, never a failed build).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub could_not_run: bool,
    /// Why it could not run (`data.error`), for the person asked to step in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl QaSnapshot {
    /// Whether the run succeeded (exit code 0, and it did run).
    pub fn passed(&self) -> bool {
        self.exec_exit_code == Some(0) && !self.could_not_run
    }
}

/// Verdicts so far: a count and the last two.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// `judge.score` events folded.
    pub count: u32,
    pub latest: Option<VerdictRecord>,
    pub previous: Option<VerdictRecord>,
    /// The latest join's combined verdict while it is the verdict the routes last acted on (a
    /// `judge.score` routed on its own clears it): what a summary shows instead of `latest`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routed_join: Option<Joined>,
}

/// One `judge.score`, raw and corrected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRecord {
    pub event_id: String,
    /// The role that judged (the event's `from`): summaries name it, never a fixed "verifier".
    /// Empty in snapshots written before it was recorded.
    #[serde(default)]
    pub from: String,
    pub raw: RawScores,
    pub corrected: Scorecard,
    pub corrections: Vec<Correction>,
    pub severity: Severity,
    /// The severity was absent and defaulted to `Important`.
    pub severity_defaulted: bool,
}

/// Budget counters and the warnings already given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Budgets {
    /// Plans after the first one (kinds declared `slot: plan`).
    pub respecs: u32,
    /// Builds (kinds declared `slot: build`): the rework a `source: rework` dimension counts.
    pub builds: u32,
    /// `user.veto` events.
    pub(crate) vetoes: u32,
    /// Σ `metadata.tokens_in + tokens_out`.
    pub tokens: u64,
    pub tokens_warned: bool,
    pub wall_clock_warned: bool,
    /// `error` events since the last progress (a `produces` kind or a `qa.result`).
    pub errors_in_a_row: u32,
    /// Whether the current run of errors was already reported as stuck.
    pub(crate) stuck_reported: bool,
    pub(crate) errors_total: u32,
    /// `qa.result`s in a row whose checks could not run (status `error`), since the last build
    /// or the last run that did check: what `qa.retry.max` bounds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) qa_errors_in_a_row: u32,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// What the engine knows about one role.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleState {
    /// Spawn effects issued.
    pub spawns: u32,
    /// Turns that ended with one of the role's `produces` kinds.
    pub turns: u32,
    /// Failed spawns since the last successful turn (the circuit breaker's count).
    pub failures_in_a_row: u32,
    pub failures_total: u32,
    /// Fallback adapters already swapped to by the circuit breaker.
    pub circuit_swaps: u32,
    /// The class of the last failure when no retry can fix it (`auth`, `input_too_large`,
    /// `network`: the error's `data.retryable` is false); cleared by the next success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fatal: Option<String>,
    /// Adapter override from `/swap` or a circuit swap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// Paused by `/pause @role`.
    pub paused: bool,
    /// A spawn held back by a pause, released by `/resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<SpawnContext>,
    /// Messages for the next spawn of this role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_interventions: Vec<Intervention>,
    /// What the last spawn was given, so a retry gets the same context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_spawn: Option<SpawnContext>,
    /// The turn running now: opened by its `agent.wake` (the spawn's effect id, empty when the
    /// wake named none), closed by its `agent.stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_turn: Option<String>,
}

/// The context of a spawn: what the last one was given (for retries), or one held back by a
/// pause (for `/resume`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnContext {
    /// The effect id of the spawn (for a queued one, the id it would have had).
    pub effect_id: String,
    pub cause: SpawnCause,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Feedback>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interventions: Vec<Intervention>,
}

/// The session waits for `/approve` or `/veto`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Awaiting {
    /// The `judge.score` whose verdict asked for a person (or the event that did, for a
    /// non-verdict await).
    pub judge_event_id: String,
    /// The kind whose route awaits: `verdict` for a verdict route, else the event kind. Only a
    /// verdict can be approved.
    pub on: String,
}

impl Awaiting {
    /// Whether a verdict is what the person is asked about.
    pub fn is_verdict(&self) -> bool {
        self.on == "verdict"
    }
}

/// How the session ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Terminal {
    /// `None` only when replaying a transcript whose `done` recorded no outcome (never guessed
    /// from the reason).
    pub outcome: Option<Outcome>,
    pub reason: String,
    /// The event that ended it (a `done` event, or the event whose effects included the stop).
    pub event_id: String,
    /// A different reason a later `done` line recorded (foreign transcripts), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_reason: Option<String>,
}

impl EventSummary {
    /// Overwrite with `event`'s summary, reusing the existing allocations (replay does this for
    /// every event).
    pub(crate) fn overwrite(&mut self, event: &crate::transcript::Event) {
        self.id.clone_from(&event.id);
        self.ts.clone_from(&event.ts);
        self.from.clone_from(&event.from);
        if self.kind != event.kind.as_str() {
            self.kind.clear();
            self.kind.push_str(event.kind.as_str());
        }
        match (&event.body, &mut self.body) {
            (None, slot) => *slot = None,
            (Some(body), Some(kept)) if body.len() <= PREVIEW => kept.clone_from(body),
            (Some(body), slot) => *slot = Some(clip(body, PREVIEW)),
        }
    }
}
