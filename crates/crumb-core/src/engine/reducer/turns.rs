//! Turns and the spawns they decide. A role's event can decide the next spawn while the role's
//! own turn still runs, before the dispatcher's `agent.stop` reports what that turn used. Such a
//! spawn waits for the `agent.stop` (it is *deferred*): the limits stage then sees the usage of
//! the triggering turn, so `tokens.hard` means "no turn starts once usage ≥ hard" counting every
//! turn that decided it. A turn is open from its `agent.wake` to its `agent.stop`; events of a
//! role with no open turn (the person, the runner, a script without wakes) decide at once.

use super::Step;
use crate::engine::effect::Effect;
use crate::engine::state::{DeferredSpawn, MAX_LIST, SpawnContext};
use crate::transcript::Kind;

impl Step<'_> {
    /// Bookkeeping: open the sender's turn on `agent.wake`, close it on `agent.stop`. Returns
    /// whether this event closed a turn (its deferred spawns may start).
    pub(super) fn track_turn(&mut self) -> bool {
        let event = self.event;
        if !matches!(event.kind, Kind::AgentWake | Kind::AgentStop)
            || !self.table.is_role(&event.from)
        {
            return false;
        }
        let effect_id = event
            .metadata
            .as_ref()
            .and_then(|m| m.effect_id.clone())
            .unwrap_or_default();
        let record = self.state.role_mut(&event.from);
        if event.kind == Kind::AgentWake {
            record.open_turn = Some(effect_id);
            return false;
        }
        // A stop closes the open turn it names (a stale stop of an earlier attempt does not).
        match &record.open_turn {
            Some(open) if open.is_empty() || effect_id.is_empty() || *open == effect_id => {
                record.open_turn = None;
                true
            }
            _ => false,
        }
    }

    /// Hold back the spawns this event decided while its sender's turn is still open.
    pub(super) fn defer_spawns(&mut self) {
        let from = &self.event.from;
        let open = self
            .state
            .roles
            .get(from)
            .is_some_and(|r| r.open_turn.is_some());
        if !open || !self.effects.iter().any(|e| matches!(e, Effect::Spawn(_))) {
            return;
        }
        let effects = std::mem::take(&mut self.effects);
        for effect in effects {
            match effect {
                Effect::Spawn(spawn) if self.state.deferred.len() < MAX_LIST => {
                    self.state.deferred.push(DeferredSpawn {
                        after: from.clone(),
                        role: spawn.role,
                        context: SpawnContext {
                            effect_id: spawn.id,
                            cause: spawn.cause,
                            feedback: spawn.feedback,
                            interventions: spawn.interventions,
                        },
                    });
                }
                other => self.effects.push(other),
            }
        }
    }

    /// The turn of this event's sender closed and the limits let the session go on: start the
    /// spawns it decided, in the order they were decided.
    pub(super) fn release_deferred(&mut self) {
        if !self
            .state
            .deferred
            .iter()
            .any(|d| d.after == self.event.from)
        {
            return;
        }
        let (ready, waiting): (Vec<DeferredSpawn>, Vec<DeferredSpawn>) =
            std::mem::take(&mut self.state.deferred)
                .into_iter()
                .partition(|d| d.after == self.event.from);
        self.state.deferred = waiting;
        if self.state.done.is_some() {
            return;
        }
        for deferred in ready {
            let context = deferred.context;
            self.spawn(
                &deferred.role,
                context.cause,
                context.feedback,
                context.interventions,
            );
        }
    }
}
