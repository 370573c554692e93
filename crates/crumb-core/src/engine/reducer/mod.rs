//! The reducer: one event in, the next state and the effects out.
//!
//! Every event goes through the same fixed stages, in this order:
//! 0. **authority** — an event from a role of a kind the role may not write (see
//!    [`crate::pipeline::role_authority`]), or a `goal` from anyone but the person or the runner, is
//!    counted in `refused_events` and otherwise ignored: an agent that appends to the file
//!    directly gets no further than one that goes through `crumb event`;
//! 1. **bookkeeping** — counters, clock, snapshots (the plan and build slots, QA), spawn outcomes;
//! 2. **user commands** — `user.*` events: pause, resume, approve, veto, goto, swap, append, cancel,
//!    reset-circuit, ask; each acknowledged with an `ack` event;
//! 3. **route** — the table's route for the event (for `judge.score`: guards → corrected verdict →
//!    `audit` → verdict route); the spawns an event of a still-open turn decides wait for that
//!    turn's `agent.stop` (see `turns`);
//! 4. **limits** — circuit breaker (retry, swap, stop), tokens, wall clock, stuck; then the
//!    spawns deferred to the turn this event closed start, unless the limits stopped the session;
//! 5. **pause filter** — spawns of paused roles are queued instead of issued;
//! 6. **pairing** — each spawn takes the interventions waiting for its role.
//!
//! Nothing here reads the clock, the environment or a file: time comes from event timestamps, and
//! every effect id is `<event id>:<n>`. Role names come from the table, never from this code.

mod fan_out;
mod limits;
mod qa_error;
mod route;
mod turns;

pub use qa_error::QA_STATUS_ERROR;

use crate::transcript::timestamp::parse_ms;
use serde_json::{Map, Value};

use super::ask;
use super::effect::{self, Append, Effect, Feedback, Intervention, Spawn, SpawnCause};
use super::state::{
    BuildSnapshot, EventSummary, MAX_LIST, MAX_TEXT, PREVIEW, PlanSnapshot, QaSnapshot, State,
    Terminal, clip,
};
use crate::pipeline::kinds::Slot;
use crate::pipeline::role_authority;
use crate::pipeline::table::TransitionTable;
use crate::transcript::payload::{data, data_str};
use crate::transcript::{Draft, Event, Kind, Metadata};
use crate::vocab::{Outcome, Severity, Verdict};

/// `metadata.tool` of every event the engine composes.
pub(crate) const ENGINE_TOOL: &str = "crumb-engine@v1";

/// Fold `event` into a copy of `state`: the pure form, for callers that keep the old state.
pub fn reduce(table: &TransitionTable, state: &State, event: &Event) -> (State, Vec<Effect>) {
    let mut next = state.clone();
    let effects = next.apply(table, event);
    (next, effects)
}

impl State {
    /// A fresh state (no events folded).
    pub fn new() -> Self {
        State::default()
    }

    /// Fold `event` into this state in place and return the effects. [`reduce`] and replay both
    /// go through here.
    pub fn apply(&mut self, table: &TransitionTable, event: &Event) -> Vec<Effect> {
        self.apply_traced(table, event, None)
    }

    /// [`State::apply`], also pushing onto `fired` the index of every route the event fired
    /// (matched, whether its action ran or its budget stopped the session): how `crumb check`
    /// finds routes no path ever takes. Replay passes `None` and pays nothing for it.
    pub(crate) fn apply_traced(
        &mut self,
        table: &TransitionTable,
        event: &Event,
        fired: Option<&mut Vec<usize>>,
    ) -> Vec<Effect> {
        let mut step = Step {
            table,
            state: self,
            event,
            effects: Vec::new(),
            next_index: 0,
            failed_role: None,
            fired,
        };
        step.run();
        step.effects
    }
}

/// One reduction in progress.
pub(super) struct Step<'a> {
    pub(super) table: &'a TransitionTable,
    pub(super) state: &'a mut State,
    pub(super) event: &'a Event,
    pub(super) effects: Vec<Effect>,
    next_index: u32,
    /// The role whose spawn this event reports as failed.
    failed_role: Option<String>,
    /// Where the routes fired are noted, when someone asked ([`State::apply_traced`]).
    pub(super) fired: Option<&'a mut Vec<usize>>,
}

impl Step<'_> {
    fn run(&mut self) {
        if self.refused() {
            self.state.events += 1;
            self.state.refused_events += 1;
            return;
        }
        let now_ms = parse_ms(&self.event.ts);
        // `/ask` answers describe the state *before* the question.
        let answer = ask::pending_answer(self.table, self.state, self.event, now_ms);
        let was_done = self.state.done.is_some();
        self.bookkeeping(now_ms);
        let turn_closed = self.track_turn();
        self.user_command(answer, was_done);
        if !was_done && self.state.done.is_none() {
            self.route();
        } else if self.event.kind == Kind::JudgeScore {
            // Terminal: record the verdict for people, route nothing.
            self.assess(false);
        }
        self.defer_spawns();
        if !was_done {
            self.limits();
        }
        if turn_closed {
            self.release_deferred();
        }
        self.pause_filter();
        self.pairing();
    }

    // ---- stage 0: authority --------------------------------------------------------------------

    /// Whether this event is not the writer's to send, so the engine must not act on it.
    fn refused(&self) -> bool {
        let event = self.event;
        if event.kind == Kind::Goal {
            return !matches!(event.from.as_str(), "user" | "system");
        }
        self.table
            .role(&event.from)
            .is_some_and(|role| !role_authority::accepts_from_role(&role.produces, event.kind))
    }

    // ---- ids and effect builders -------------------------------------------------------------

    pub(super) fn next_id(&mut self) -> String {
        let id = format!("{}:{}", self.event.id, self.next_index);
        self.next_index += 1;
        id
    }

    /// Queue an engine-composed event, stamped with provenance and the effect id.
    pub(super) fn append(&mut self, mut draft: Draft) {
        let id = self.next_id();
        let metadata = draft.metadata.get_or_insert_with(Metadata::default);
        metadata.deterministic = Some(true);
        metadata.tool = Some(ENGINE_TOOL.to_owned());
        metadata.effect_id = Some(id.clone());
        if draft.parent_event_id.is_none() {
            draft.parent_event_id = Some(self.event.id.clone());
        }
        self.effects.push(Effect::Append(Append {
            id,
            draft: Box::new(draft),
        }));
    }

    /// Record a hook (budget warning, stuck crossing, queued spawn …) as a `hook` event.
    pub(super) fn hook(&mut self, name: &str, body: String, mut data: Map<String, Value>) {
        data.insert("hook".into(), Value::String(name.to_owned()));
        self.append(Draft::new("system", Kind::Hook).body(body).data(data));
    }

    pub(super) fn spawn(
        &mut self,
        role: &str,
        cause: SpawnCause,
        feedback: Option<Feedback>,
        interventions: Vec<Intervention>,
    ) {
        let id = self.next_id();
        self.effects.push(Effect::Spawn(Spawn {
            id,
            role: role.to_owned(),
            adapter: None,
            attempt: 0,
            cause,
            feedback,
            interventions,
            consumed_intervene_ids: Vec::new(),
        }));
    }

    /// End the session because a budget, limit or breaker says so (outcome `stopped`).
    pub(super) fn stop(&mut self, reason: &str) {
        self.end(Outcome::Stopped, reason);
    }

    /// End the session (the first end wins) and suppress any work this event would start.
    pub(super) fn end(&mut self, outcome: Outcome, reason: &str) {
        if self.state.done.is_some() {
            return;
        }
        self.state.done = Some(Terminal {
            outcome: Some(outcome),
            reason: reason.to_owned(),
            event_id: self.event.id.clone(),
            recorded_reason: None,
        });
        self.state.awaiting = None;
        self.state.deferred.clear();
        self.effects.retain(|e| !e.starts_work());
        let id = self.next_id();
        self.effects.push(Effect::Done(effect::Done {
            id,
            outcome,
            reason: reason.to_owned(),
        }));
    }

    // ---- stage 1: bookkeeping ----------------------------------------------------------------

    fn bookkeeping(&mut self, now_ms: Option<i64>) {
        let event = self.event;
        let state = &mut *self.state;
        state.events += 1;
        if state.session_id.is_none() {
            state.session_id = Some(event.session_id.clone());
        }
        match now_ms {
            Some(ms) => {
                if state.clock.started_ms.is_none() {
                    state.clock.started_ms = Some(ms);
                    state.clock.started_at = Some(event.ts.clone());
                }
                if std::mem::take(&mut state.clock.after_fork_point)
                    && let Some(latest) = state.clock.latest_ms
                {
                    let gap = u64::try_from(ms.saturating_sub(latest)).unwrap_or(0);
                    state.clock.excluded_ms = state.clock.excluded_ms.saturating_add(gap);
                }
                state.clock.latest_ms =
                    Some(state.clock.latest_ms.map_or(ms, |latest| latest.max(ms)));
            }
            None => state.clock.bad_timestamps += 1,
        }
        if state.clock.fork_at.as_deref() == Some(event.id.as_str()) {
            state.clock.fork_at = None;
            state.clock.after_fork_point = true;
        }
        state
            .last_event
            .get_or_insert_with(EventSummary::default)
            .overwrite(event);
        // Usage counts only from the runner's usage tap (`agent.stop`), never from what an
        // agent's own event claims.
        if let Some(meta) = event
            .metadata
            .as_ref()
            .filter(|_| event.kind == Kind::AgentStop)
        {
            let used = meta
                .tokens_in
                .unwrap_or(0)
                .saturating_add(meta.tokens_out.unwrap_or(0));
            state.budgets.tokens = state.budgets.tokens.saturating_add(used);
        }
        self.snapshots();
        self.turn_outcome();
    }

    /// Kind-specific bookkeeping: the declared plan and build slots, the QA result, terminal `done` lines and
    /// spawn failures.
    fn snapshots(&mut self) {
        let event = self.event;
        let state = &mut *self.state;

        // The declared plan and build kinds (`kinds:`): the engine knows the slot, not the name.
        match self.table.slot(event.kind.as_str()) {
            Some(Slot::Plan) => {
                if state.plan.is_some() {
                    state.budgets.respecs += 1;
                }
                state.plan = Some(plan_snapshot(event));
                return;
            }
            Some(Slot::Build) => {
                state.budgets.builds += 1;
                state.budgets.qa_errors_in_a_row = 0;
                state.build = Some(BuildSnapshot {
                    event_id: event.id.clone(),
                    from: event.from.clone(),
                    provider: event.metadata.as_ref().and_then(|m| m.provider.clone()),
                    artifacts: event
                        .artifacts
                        .iter()
                        .take(MAX_LIST)
                        .map(|a| clip(&a.path, PREVIEW))
                        .collect(),
                });
                return;
            }
            None => {}
        }
        match event.kind {
            Kind::Goal => state.goal = Some(clip(event.body.as_deref().unwrap_or(""), MAX_TEXT)),
            Kind::QaResult => {
                let snapshot = qa_snapshot(event);
                if snapshot.could_not_run {
                    // The machine failed, not the session: no progress, and no error either.
                    state.budgets.qa_errors_in_a_row += 1;
                } else {
                    state.budgets.qa_errors_in_a_row = 0;
                    state.budgets.errors_in_a_row = 0;
                    state.budgets.stuck_reported = false;
                }
                state.qa = Some(snapshot);
            }
            Kind::VerifyResult => state.verify_aliases += 1,
            Kind::UserVeto => state.budgets.vetoes += 1,
            Kind::Done => {
                let reason = data_str(event, "reason")
                    .or(event.body.as_deref())
                    .map_or_else(|| "done".to_owned(), |r| clip(r.trim(), PREVIEW));
                let outcome = data_str(event, "outcome").and_then(Outcome::parse);
                match &mut state.done {
                    None => {
                        state.done = Some(Terminal {
                            outcome,
                            reason,
                            event_id: event.id.clone(),
                            recorded_reason: None,
                        });
                        state.awaiting = None;
                    }
                    Some(terminal)
                        if terminal.reason != reason && terminal.recorded_reason.is_none() =>
                    {
                        terminal.recorded_reason = Some(reason);
                    }
                    Some(_) => {}
                }
            }
            Kind::SessionStart => {
                // A fork: the time between its fork point and its own first event is not worked.
                state.clock.fork_at = fork_point(event).or(state.clock.fork_at.take());
                // What each role was bound to, so a swap can say what it moved away from.
                if let Some(Value::Object(bindings)) = data(event).and_then(|d| d.get("bindings")) {
                    for (role, binding) in bindings.iter().take(MAX_LIST) {
                        if let Some(adapter) = binding.get("adapter").and_then(Value::as_str) {
                            state
                                .bound_adapters
                                .insert(clip(role, PREVIEW), clip(adapter, PREVIEW));
                        }
                    }
                }
            }
            Kind::Error => {
                state.budgets.errors_total += 1;
                state.budgets.errors_in_a_row += 1;
                let role = data_str(event, "role")
                    .filter(|r| self.table.is_role(r))
                    .or_else(|| Some(event.from.as_str()).filter(|r| self.table.is_role(r)));
                let fatal = data(event)
                    .and_then(|d| d.get("retryable"))
                    .and_then(Value::as_bool)
                    == Some(false);
                let class = data_str(event, "class").unwrap_or("fatal").to_owned();
                if let Some(role) = role {
                    let record = state.role_mut(role);
                    record.failures_in_a_row += 1;
                    record.failures_total += 1;
                    record.fatal = fatal.then_some(class);
                    self.failed_role = Some(role.to_owned());
                }
            }
            _ => {}
        }
    }

    /// A successful turn: the role emitted one of its `produces` kinds.
    fn turn_outcome(&mut self) {
        let event = self.event;
        if let Some(role) = self.table.role(&event.from)
            && role.produces.iter().any(|k| k == event.kind.as_str())
        {
            let record = self.state.role_mut(&role.id);
            record.turns += 1;
            record.failures_in_a_row = 0;
            record.fatal = None;
            self.state.budgets.errors_in_a_row = 0;
            self.state.budgets.stuck_reported = false;
        }
    }
}

fn plan_snapshot(event: &Event) -> PlanSnapshot {
    let data = data(event);
    let acceptance_criteria = match data.and_then(|d| d.get("acceptance_criteria")) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .take(MAX_LIST)
            .map(|s| clip(s, MAX_TEXT))
            .collect(),
        Some(Value::String(one)) if !one.trim().is_empty() => vec![clip(one, MAX_TEXT)],
        _ => Vec::new(),
    };
    let ac_predicates = match data.and_then(|d| d.get("ac_predicates")) {
        Some(Value::Array(items)) => items
            .iter()
            .filter(|p| p.is_object())
            .take(MAX_LIST)
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    PlanSnapshot {
        event_id: event.id.clone(),
        from: event.from.clone(),
        body: event.body.as_deref().map(|b| clip(b, MAX_TEXT)),
        acceptance_criteria,
        ac_predicates,
    }
}

fn qa_snapshot(event: &Event) -> QaSnapshot {
    let data = data(event);
    let mut snapshot = QaSnapshot {
        event_id: event.id.clone(),
        build_event_id: data
            .and_then(|d| d.get("build_event_id"))
            .and_then(Value::as_str)
            .map(|s| clip(s, PREVIEW))
            .or_else(|| event.parent_event_id.clone()),
        exec_exit_code: data
            .and_then(|d| d.get("exec_exit_code"))
            .and_then(Value::as_i64),
        could_not_run: data.and_then(|d| d.get("status")).and_then(Value::as_str)
            == Some(QA_STATUS_ERROR),
        ..QaSnapshot::default()
    };
    if snapshot.could_not_run {
        snapshot.problem = data
            .and_then(|d| d.get("error"))
            .and_then(Value::as_str)
            .map(|s| clip(s, MAX_TEXT));
    }
    if let Some(Value::Array(results)) = data.and_then(|d| d.get("ac_results")) {
        for status in results
            .iter()
            .filter_map(|r| r.get("status"))
            .filter_map(Value::as_str)
        {
            match status {
                "PASS" | "pass" => snapshot.ac_passed += 1,
                "FAIL" | "fail" => snapshot.ac_failed += 1,
                _ => snapshot.ac_skipped += 1,
            }
        }
    }
    snapshot
}

/// The verdict a route reacts to when a person vetoes: the repair cell (`FAIL` × `Important`).
pub(super) const VETO_CELL: (Verdict, Severity) = (Verdict::Fail, Severity::Important);

/// The fork point a fork's `session.start` records (`data.fork.at`).
fn fork_point(event: &Event) -> Option<String> {
    data(event)
        .and_then(|d| d.get("fork"))
        .and_then(|f| f.get("at"))
        .and_then(Value::as_str)
        .map(|at| clip(at, PREVIEW))
}
