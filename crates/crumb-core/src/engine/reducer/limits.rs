//! Stages 4 to 6 of the reducer: limits (circuit breaker, tokens, wall clock, stuck), the pause
//! filter (spawns of paused roles are queued) and pairing (each spawn takes the interventions
//! waiting for its role).

use serde_json::{Map, json};

use super::Step;
use crate::engine::ask;
use crate::engine::effect::{Effect, Intervention, SpawnCause};
use crate::engine::state::{MAX_PENDING_INTERVENTIONS, MAX_TEXT, SpawnContext, State, clip};
use crate::pipeline::choices::CircuitAction;
use crate::transcript::{Draft, Kind};

impl Step<'_> {
    // ---- stage 4: limits ---------------------------------------------------------------------

    pub(super) fn limits(&mut self) {
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
        let fatal = record.fatal.clone();
        if fatal.is_none()
            && (limits.circuit_open_after == 0 || failures < limits.circuit_open_after)
        {
            self.spawn(role, SpawnCause::Retry, feedback, interventions);
            return;
        }
        // Each opening swaps to the next fallback in the declared order; none left: stop. A
        // failure no retry can fix skips retries and fallbacks on the same adapter.
        let current = self.state.current_adapter(role);
        let record = self.state.role_mut(role);
        let skip = usize::try_from(record.circuit_swaps).unwrap_or(usize::MAX);
        let swap_to = match limits.circuit_then {
            CircuitAction::Swap => spec
                .fallback
                .iter()
                .enumerate()
                .skip(skip)
                .find(|(_, adapter)| fatal.is_none() || current.as_ref() != Some(*adapter))
                .map(|(i, adapter)| (i, adapter.clone())),
            CircuitAction::Stop => None,
        };
        let Some((index, adapter)) = swap_to else {
            match &fatal {
                Some(class) => self.stop(&format!("agent_{class}:{role}")),
                None => self.stop(&format!("circuit_open:{role}")),
            }
            return;
        };
        record.circuit_swaps = u32::try_from(index + 1).unwrap_or(u32::MAX);
        record.failures_in_a_row = 0;
        record.fatal = None;
        let cause = fatal.as_deref().map_or("circuit_open", |class| class);
        self.state.record_swap(role, &adapter, cause);
        self.state.role_mut(role).adapter = Some(adapter.clone());
        let mut data = Map::new();
        data.insert("event".into(), json!("adapter_swapped"));
        data.insert("role".into(), json!(role));
        data.insert("reason".into(), json!(cause));
        data.insert("consecutive_failures".into(), json!(failures));
        data.insert("previous_adapter".into(), json!(current));
        data.insert("new_adapter".into(), json!(adapter));
        let body = match &fatal {
            Some(class) => format!(
                "{role} failed ({class}) in a way no retry can fix: swapping to adapter {adapter}"
            ),
            None => format!(
                "circuit open for {role} after {failures} failed spawns: swapping to adapter {adapter}"
            ),
        };
        self.append(Draft::new("system", Kind::Audit).body(body).data(data));
        self.spawn(role, SpawnCause::CircuitSwap, feedback, interventions);
    }

    // ---- stage 5: pause filter ---------------------------------------------------------------

    pub(super) fn pause_filter(&mut self) {
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
                    self.state.role_mut(&role).queued = Some(SpawnContext {
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
    pub(in crate::engine) fn release(&mut self, role: &str) -> bool {
        let Some(queued) = self.state.roles.get_mut(role).and_then(|r| r.queued.take()) else {
            return false;
        };
        self.spawn(role, queued.cause, queued.feedback, queued.interventions);
        true
    }

    // ---- stage 6: pairing --------------------------------------------------------------------

    pub(super) fn pairing(&mut self) {
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
    pub(in crate::engine) fn intervene(&mut self, role: &str, text: &str) {
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
