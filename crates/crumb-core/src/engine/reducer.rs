//! The reducer: one event in, the next state and the effects out.
//!
//! Every event goes through the same fixed stages, in this order:
//! 1. **bookkeeping** — counters, clock, snapshots (spec, build, QA), spawn outcomes;
//! 2. **user commands** — `user.*` events: pause, resume, approve, veto, goto, swap, append, cancel,
//!    reset-circuit, ask; each acknowledged with an `ack` event;
//! 3. **route** — the table's route for the event (for `judge.score`: guards → corrected verdict →
//!    `audit` → verdict route);
//! 4. **limits** — circuit breaker (retry, swap, stop), tokens, wall clock, stuck;
//! 5. **pause filter** — spawns of paused roles are queued instead of issued;
//! 6. **pairing** — each spawn takes the interventions waiting for its role.
//!
//! Nothing here reads the clock, the environment or a file: time comes from event timestamps, and
//! every effect id is `<event id>:<n>`. Role names come from the table, never from this code.

use crate::transcript::timestamp::parse_ms;
use serde_json::{Map, Value, json};

use super::ask;
use super::effect::{self, Append, Effect, Feedback, Intervention, RunQa, Spawn, SpawnCause};
use super::guards::{self, Evidence, RawScores};
use super::state::{
    Awaiting, BuildSnapshot, EventSummary, MAX_LIST, MAX_PENDING_INTERVENTIONS, MAX_TEXT, PREVIEW,
    QaSnapshot, QueuedSpawn, SpawnContext, SpecSnapshot, State, Terminal, VerdictRecord, clip,
};
use crate::pipeline::table::CircuitAction;
use crate::pipeline::table::{Action, CompiledRoute, TransitionTable};
use crate::transcript::payload::{data, data_str};
use crate::transcript::{Draft, Event, Kind, Metadata};
use crate::vocab::{Severity, Verdict};

/// `metadata.tool` of every event the engine composes.
pub const ENGINE_TOOL: &str = "crumb-engine@v1";
/// The `done` reason of a `done: pass` route.
const PASS_REASON: &str = "verdict_pass";

/// Fold `event` into a copy of `state`: the pure form the issue asks for.
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
        let mut step = Step {
            table,
            state: self,
            event,
            effects: Vec::new(),
            next_index: 0,
            failed_role: None,
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
}

impl Step<'_> {
    fn run(&mut self) {
        let now_ms = parse_ms(&self.event.ts);
        // `/ask` answers describe the state *before* the question.
        let answer = ask::pending_answer(self.table, self.state, self.event, now_ms);
        let was_done = self.state.done.is_some();
        self.bookkeeping(now_ms);
        self.user_command(answer, was_done);
        if !was_done && self.state.done.is_none() {
            self.route();
        } else if self.event.kind == Kind::JudgeScore {
            // Terminal: record the verdict for people, route nothing.
            self.assess(false);
        }
        if !was_done {
            self.limits();
        }
        self.pause_filter();
        self.pairing();
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

    /// End the session (first reason wins) and suppress any work this event would start.
    pub(super) fn stop(&mut self, reason: &str) {
        if self.state.done.is_some() {
            return;
        }
        self.state.done = Some(Terminal {
            reason: reason.to_owned(),
            event_id: self.event.id.clone(),
            recorded_reason: None,
        });
        self.state.awaiting = None;
        self.effects.retain(|e| !e.starts_work());
        let id = self.next_id();
        self.effects.push(Effect::Done(effect::Done {
            id,
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
                state.clock.latest_ms =
                    Some(state.clock.latest_ms.map_or(ms, |latest| latest.max(ms)));
            }
            None => state.clock.bad_timestamps += 1,
        }
        state
            .last_event
            .get_or_insert_with(EventSummary::default)
            .overwrite(event);
        if let Some(meta) = &event.metadata {
            let used = meta
                .tokens_in
                .unwrap_or(0)
                .saturating_add(meta.tokens_out.unwrap_or(0));
            state.budgets.tokens = state.budgets.tokens.saturating_add(used);
        }
        self.snapshots();
        self.turn_outcome();
    }

    /// Kind-specific bookkeeping: the latest spec, build and QA result, terminal `done` lines and
    /// spawn failures.
    fn snapshots(&mut self) {
        let event = self.event;
        let state = &mut *self.state;

        match event.kind {
            Kind::Goal => state.goal = Some(clip(event.body.as_deref().unwrap_or(""), MAX_TEXT)),
            Kind::Spec | Kind::SpecUpdate => {
                if state.spec.is_some() {
                    state.budgets.respecs += 1;
                }
                state.spec = Some(spec_snapshot(event));
            }
            Kind::Build => {
                state.budgets.builds += 1;
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
            }
            Kind::QaResult => {
                state.qa = Some(qa_snapshot(event));
                state.budgets.errors_in_a_row = 0;
                state.budgets.stuck_reported = false;
            }
            Kind::VerifyResult => state.verify_aliases += 1,
            Kind::UserVeto => state.budgets.vetoes += 1,
            Kind::Done => {
                let reason = data_str(event, "reason")
                    .or(event.body.as_deref())
                    .map_or_else(|| "done".to_owned(), |r| clip(r.trim(), PREVIEW));
                match &mut state.done {
                    None => {
                        state.done = Some(Terminal {
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
            Kind::Error => {
                state.budgets.errors_total += 1;
                state.budgets.errors_in_a_row += 1;
                let role = data_str(event, "role")
                    .filter(|r| self.table.is_role(r))
                    .or_else(|| Some(event.from.as_str()).filter(|r| self.table.is_role(r)));
                if let Some(role) = role {
                    let record = state.role_mut(role);
                    record.failures_in_a_row += 1;
                    record.failures_total += 1;
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
            self.state.budgets.errors_in_a_row = 0;
            self.state.budgets.stuck_reported = false;
        }
    }

    // ---- stage 3: the table's route ----------------------------------------------------------

    fn route(&mut self) {
        let event = self.event;
        if event.kind == Kind::JudgeScore {
            self.judge();
            return;
        }
        // `spec.update` fills the same slot as `spec`: without its own route it takes the spec route.
        let route = self
            .table
            .route_for(event.kind.as_str(), &event.from)
            .or_else(|| {
                (event.kind == Kind::SpecUpdate)
                    .then(|| self.table.route_for(Kind::Spec.as_str(), &event.from))
                    .flatten()
            });
        let Some(route) = route else {
            if !event.kind.as_str().starts_with("user.") {
                self.state.unrouted_events += 1;
            }
            return;
        };
        if matches!(event.kind, Kind::Spec | Kind::SpecUpdate)
            && self.state.budgets.respecs > self.table.limits.max_respec
        {
            self.stop("too_many_respec");
            return;
        }
        self.fire(route, None, SpawnCause::Route);
    }

    /// Carry out a route's action.
    pub(super) fn fire(
        &mut self,
        route: &CompiledRoute,
        feedback: Option<Feedback>,
        cause: SpawnCause,
    ) {
        if let Some(max) = route.max {
            let fires = self.state.route_fires.entry(route.index).or_default();
            if *fires >= max {
                // The route's own budget, declared so its loop cannot run forever.
                self.stop(&format!("route_budget:{}", route.index + 1));
                return;
            }
            *fires += 1;
        }
        match &route.action {
            Action::Spawn { role } => {
                let feedback = if route.with_feedback { feedback } else { None };
                self.spawn(role, cause, feedback, Vec::new());
            }
            Action::RunQa => {
                let build_event_id = if self.event.kind == Kind::Build {
                    self.event.id.clone()
                } else {
                    self.state
                        .build
                        .as_ref()
                        .map_or_else(|| self.event.id.clone(), |b| b.event_id.clone())
                };
                let id = self.next_id();
                self.effects.push(Effect::RunQa(RunQa {
                    id,
                    build_event_id,
                    entry: self.table.qa.as_ref().and_then(|qa| qa.entry.clone()),
                    ac_predicates: self
                        .state
                        .spec
                        .as_ref()
                        .map(|s| s.ac_predicates.clone())
                        .unwrap_or_default(),
                }));
            }
            Action::Done { reason } => {
                let reason = if reason == "pass" {
                    PASS_REASON
                } else {
                    reason.as_str()
                };
                self.stop(reason);
            }
            Action::AwaitHuman => {
                let judge_event_id = self
                    .state
                    .verification
                    .latest
                    .as_ref()
                    .map_or_else(|| self.event.id.clone(), |v| v.event_id.clone());
                self.state.awaiting = Some(Awaiting {
                    judge_event_id: judge_event_id.clone(),
                });
                let body = match &self.state.verification.latest {
                    Some(v) => format!(
                        "verdict {} (aggregate {}) needs a person: /approve to accept, /veto <reason> to repair",
                        v.corrected.verdict, v.corrected.aggregate
                    ),
                    None => "waiting for a person: /approve or /veto <reason>".to_owned(),
                };
                let mut data = Map::new();
                data.insert("reason".into(), json!("await_human"));
                data.insert("judge_event_id".into(), json!(judge_event_id));
                self.append(
                    Draft::new("system", Kind::SessionAwaiting)
                        .body(body)
                        .data(data),
                );
            }
        }
    }

    /// `judge.score`: guards, one audit event for every correction, then the verdict route.
    fn judge(&mut self) {
        let event = self.event;
        let Some((verdict, severity)) = self.assess(true) else {
            return;
        };
        let scores = event.scores.as_ref();
        let Some(route) = self.table.route_for_verdict(verdict, severity) else {
            let mut data = Map::new();
            data.insert("verdict".into(), json!(verdict));
            data.insert("severity".into(), json!(severity));
            self.hook(
                "unrouted_verdict",
                format!("no route handles {verdict} × {severity}"),
                data,
            );
            return;
        };
        let repairs = matches!(route.action, Action::Spawn { .. } | Action::RunQa);
        if repairs && self.state.verification.count >= self.table.limits.max_verify {
            self.stop("too_many_verify");
            return;
        }
        let feedback = Feedback {
            source_event_id: event.id.clone(),
            verdict,
            severity,
            text: clip(
                scores
                    .and_then(|s| s.feedback.as_deref())
                    .or(event.body.as_deref())
                    .unwrap_or("verification failed"),
                MAX_TEXT,
            ),
            suggested_change: scores
                .and_then(|s| s.suggested_change.as_deref())
                .map(|s| clip(s, MAX_TEXT)),
        };
        self.fire(route, Some(feedback), SpawnCause::Route);
    }

    /// Apply the guards to a `judge.score` and record the verdict. With `live`, corrections are
    /// also published in an `audit` event and the corrected verdict and severity are returned for
    /// routing; a terminal session only records (so replay still shows the last verdict).
    fn assess(&mut self, live: bool) -> Option<(Verdict, Severity)> {
        let event = self.event;
        let scores = event.scores.as_ref();
        let raw = RawScores {
            dimensions: scores.map_or([None; 6], |s| {
                s.dimensions().map(|(_, d)| d.map(|d| d.score))
            }),
            aggregate: scores.and_then(|s| s.aggregate),
            verdict: scores.and_then(|s| s.verdict),
        };
        let declared = scores.and_then(|s| s.deviation).map(|d| d.kind);
        let severity = declared.unwrap_or(Severity::Important);
        let evidence = Evidence {
            qa_exit_code: self.state.qa.as_ref().and_then(|q| q.exec_exit_code),
            ac_failed: self.state.qa.as_ref().is_some_and(|q| q.ac_failed > 0),
            judge_provider: event.metadata.as_ref().and_then(|m| m.provider.as_deref()),
            builder_provider: self
                .state
                .build
                .as_ref()
                .and_then(|b| b.provider.as_deref()),
            rework: guards::Rework {
                respecs: self.state.budgets.respecs,
                builds: self.state.budgets.builds,
                vetoes: self.state.budgets.vetoes,
            },
        };
        let judgement = guards::judge(&self.table.scoring, &raw, &evidence);
        let verdict = judgement.corrected.verdict;

        if live && !judgement.corrections.is_empty() {
            self.audit(&raw, &judgement);
        }
        let record = VerdictRecord {
            event_id: event.id.clone(),
            raw,
            corrected: judgement.corrected,
            corrections: judgement.corrections,
            severity,
            severity_defaulted: declared.is_none(),
        };
        let verification = &mut self.state.verification;
        verification.count += 1;
        verification.previous = verification.latest.replace(record);
        if !live {
            return None;
        }
        self.state.awaiting = None;
        Some((verdict, severity))
    }

    fn audit(&mut self, raw: &RawScores, judgement: &guards::Judgement) {
        let tags: Vec<String> = judgement
            .corrections
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect();
        let corrected = &judgement.corrected;
        let mut data = Map::new();
        data.insert("corrections".into(), json!(tags));
        data.insert(
            "raw".into(),
            json!({ "dimensions": raw.dimensions, "aggregate": raw.aggregate, "verdict": raw.verdict }),
        );
        data.insert(
            "corrected".into(),
            json!({ "dimensions": corrected.dimensions, "aggregate": corrected.aggregate, "verdict": corrected.verdict }),
        );
        let body = format!(
            "corrected {}: {} {} → {} {}",
            tags.join(", "),
            raw.verdict
                .map_or_else(|| "(no verdict)".to_owned(), |v| v.to_string()),
            raw.aggregate
                .map_or_else(|| "(no aggregate)".to_owned(), |a| a.to_string()),
            corrected.verdict,
            corrected.aggregate,
        );
        let metadata = Metadata {
            audit_violations: tags,
            ..Metadata::default()
        };
        self.append(
            Draft::new("validator", Kind::Audit)
                .body(body)
                .data(data)
                .metadata(metadata),
        );
    }

    // ---- stage 4: limits ---------------------------------------------------------------------

    fn limits(&mut self) {
        if self.state.done.is_some() {
            return;
        }
        let limits = &self.table.limits;
        if let Some(role) = self.failed_role.take() {
            self.spawn_failed(&role);
        }
        if self.state.done.is_some() {
            return;
        }

        let tokens = self.state.budgets.tokens;
        if limits.tokens_hard > 0 && tokens >= limits.tokens_hard {
            self.stop("token_exhausted");
            return;
        }
        if limits.tokens_warn > 0
            && tokens >= limits.tokens_warn
            && !self.state.budgets.tokens_warned
        {
            self.state.budgets.tokens_warned = true;
            let mut data = Map::new();
            data.insert("tokens".into(), json!(tokens));
            data.insert("threshold".into(), json!(limits.tokens_warn));
            data.insert("hard_cap".into(), json!(limits.tokens_hard));
            self.hook(
                "token_budget",
                format!(
                    "session token total {tokens} crossed {} (hard cap {})",
                    limits.tokens_warn, limits.tokens_hard
                ),
                data,
            );
        }

        let elapsed = self.state.clock.elapsed_ms();
        if limits.wall_clock_hard_ms > 0 && elapsed >= limits.wall_clock_hard_ms {
            self.stop("wall_clock_exhausted");
            return;
        }
        if limits.wall_clock_warn_ms > 0
            && elapsed >= limits.wall_clock_warn_ms
            && !self.state.budgets.wall_clock_warned
        {
            self.state.budgets.wall_clock_warned = true;
            let mut data = Map::new();
            data.insert("elapsed_ms".into(), json!(elapsed));
            data.insert("threshold_ms".into(), json!(limits.wall_clock_warn_ms));
            data.insert("hard_cap_ms".into(), json!(limits.wall_clock_hard_ms));
            self.hook(
                "time_budget",
                format!(
                    "session time {} crossed {} (hard cap {})",
                    ask::duration(elapsed),
                    ask::duration(limits.wall_clock_warn_ms),
                    ask::duration(limits.wall_clock_hard_ms)
                ),
                data,
            );
        }

        let errors = self.state.budgets.errors_in_a_row;
        if limits.stuck_after_errors > 0
            && errors >= limits.stuck_after_errors
            && !self.state.budgets.stuck_reported
        {
            self.state.budgets.stuck_reported = true;
            let mut data = Map::new();
            data.insert("errors_in_a_row".into(), json!(errors));
            data.insert("threshold".into(), json!(limits.stuck_after_errors));
            self.hook(
                "stuck",
                format!("session stuck: {errors} errors in a row without progress — manual intervention requested"),
                data,
            );
        }
    }

    /// A spawn of `role` failed: retry, swap adapters when the circuit opens, or stop.
    fn spawn_failed(&mut self, role: &str) {
        let Some(spec) = self.table.role(role) else {
            return;
        };
        let limits = &self.table.limits;
        let record = self.state.role_mut(role);
        let failures = record.failures_in_a_row;
        let context = record.last_spawn.clone();
        let (feedback, interventions) = context
            .map(|c| (c.feedback, c.interventions))
            .unwrap_or_default();
        if limits.circuit_open_after == 0 || failures < limits.circuit_open_after {
            self.spawn(role, SpawnCause::Retry, feedback, interventions);
            return;
        }
        let swap_to = match limits.circuit_then {
            CircuitAction::Swap if record.circuit_swaps == 0 => spec.fallback.first().cloned(),
            _ => None,
        };
        let Some(adapter) = swap_to else {
            self.stop(&format!("circuit_open:{role}"));
            return;
        };
        let previous = record.adapter.replace(adapter.clone());
        record.circuit_swaps += 1;
        record.failures_in_a_row = 0;
        let mut data = Map::new();
        data.insert("event".into(), json!("adapter_swapped"));
        data.insert("role".into(), json!(role));
        data.insert("reason".into(), json!("circuit_open"));
        data.insert("consecutive_failures".into(), json!(failures));
        data.insert("previous_adapter".into(), json!(previous));
        data.insert("new_adapter".into(), json!(adapter));
        let body = format!(
            "circuit open for {role} after {failures} failed spawns: swapping to adapter {adapter}"
        );
        self.append(Draft::new("system", Kind::Audit).body(body).data(data));
        self.spawn(role, SpawnCause::CircuitSwap, feedback, interventions);
    }

    // ---- stage 5: pause filter ---------------------------------------------------------------

    fn pause_filter(&mut self) {
        let held = |state: &State, role: &str| {
            state.paused || state.roles.get(role).is_some_and(|r| r.paused)
        };
        if !self
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Spawn(s) if held(self.state, &s.role)))
        {
            return;
        }
        let effects = std::mem::take(&mut self.effects);
        for effect in effects {
            match effect {
                Effect::Spawn(spawn) if held(self.state, &spawn.role) => {
                    let scope = if self.state.paused { "global" } else { "role" };
                    let role = spawn.role.clone();
                    self.state.next_role = Some(role.clone());
                    self.state.role_mut(&role).queued = Some(QueuedSpawn {
                        effect_id: spawn.id,
                        cause: spawn.cause,
                        feedback: spawn.feedback,
                        interventions: spawn.interventions,
                    });
                    let mut data = Map::new();
                    data.insert("role".into(), json!(role));
                    data.insert("queued".into(), json!(true));
                    data.insert("scope".into(), json!(scope));
                    let body = if scope == "global" {
                        format!("paused — would spawn {role} (queued; /resume to continue)")
                    } else {
                        format!(
                            "{role} paused — would spawn {role} (queued; /resume @{role} to continue)"
                        )
                    };
                    self.hook("queued", body, data);
                }
                other => self.effects.push(other),
            }
        }
    }

    /// Release the queued spawn of `role`, with the context it was queued with.
    pub(super) fn release(&mut self, role: &str) -> bool {
        let Some(queued) = self.state.roles.get_mut(role).and_then(|r| r.queued.take()) else {
            return false;
        };
        self.spawn(role, queued.cause, queued.feedback, queued.interventions);
        true
    }

    // ---- stage 6: pairing --------------------------------------------------------------------

    fn pairing(&mut self) {
        for effect in &mut self.effects {
            let Effect::Spawn(spawn) = effect else {
                continue;
            };
            let record = self.state.role_mut(&spawn.role);
            let mut interventions = std::mem::take(&mut record.pending_interventions);
            for own in std::mem::take(&mut spawn.interventions) {
                if !interventions.contains(&own) {
                    interventions.push(own);
                }
            }
            let mut consumed: Vec<String> = Vec::new();
            for intervention in &interventions {
                if !consumed.contains(&intervention.event_id) {
                    consumed.push(intervention.event_id.clone());
                }
            }
            spawn.interventions = interventions;
            spawn.consumed_intervene_ids = consumed;
            spawn.attempt = record.spawns;
            spawn.adapter.clone_from(&record.adapter);
            record.spawns += 1;
            record.last_spawn = Some(SpawnContext {
                effect_id: spawn.id.clone(),
                cause: spawn.cause,
                feedback: spawn.feedback.clone(),
                interventions: spawn.interventions.clone(),
            });
            self.state.next_role = Some(spawn.role.clone());
        }
    }

    /// Queue a message for the next spawn of `role`.
    pub(super) fn intervene(&mut self, role: &str, text: &str) {
        let record = self.state.role_mut(role);
        if record.pending_interventions.len() >= MAX_PENDING_INTERVENTIONS {
            record.pending_interventions.remove(0);
        }
        record.pending_interventions.push(Intervention {
            event_id: self.event.id.clone(),
            text: clip(text, MAX_TEXT),
        });
    }
}

fn spec_snapshot(event: &Event) -> SpecSnapshot {
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
    SpecSnapshot {
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
        ..QaSnapshot::default()
    };
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
