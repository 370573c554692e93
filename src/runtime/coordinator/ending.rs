//! How a drive ends: a stall recorded as `idle`, the session's own ending once its work has
//! drained (live turns whose result arrived are let end on their own), or a person's stop that
//! records nothing so `crumb resume` redoes exactly the interrupted work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{Map, json};
use tokio::sync::oneshot;

use super::catchup::{fold_item, poll};
use super::{Coordinator, CoordinatorError, Outcome, TaskDone};
use crate::engine::effect::Done;
use crate::runtime::dispatcher::{append, runner_metadata};
use crate::runtime::run_config::Ending;
use crate::transcript::{Draft, Kind};

/// One running spawn, as the coordinator holds it.
#[derive(Debug)]
pub(super) struct LiveSpawn {
    pub(super) effect_id: String,
    pub(super) cancel: oneshot::Sender<()>,
    /// Set by the dispatcher once the CLI's end-of-turn event arrived.
    pub(super) result_seen: Arc<AtomicBool>,
}

impl Coordinator<'_> {
    /// Nothing can move the session any more: end it as `idle`, recorded like any other ending.
    pub(super) fn stall(&mut self) {
        let id = format!(
            "idle:{}",
            self.replay
                .state
                .last_event
                .as_ref()
                .map_or("start", |e| e.id.as_str())
        );
        self.finishing = Some((
            Done {
                id,
                outcome: crate::vocab::Outcome::Stopped,
                reason: "idle".to_owned(),
            },
            Instant::now(),
        ));
    }

    /// Once the session is done and its work has drained (or the grace period ran out), stop what
    /// is left, write `done` + `session.end`, and fold them.
    pub(super) async fn finish_if_ready(&mut self) -> Result<Option<Ending>, CoordinatorError> {
        let Some((done, deadline)) = &self.finishing else {
            return Ok(None);
        };
        let busy = self.spawns_running > 0 || self.qa_running > 0;
        if busy && Instant::now() < *deadline {
            return Ok(None);
        }
        let (done, _) = (done.clone(), *deadline);
        // A turn whose result arrived is only shutting its CLI down: it is let end on its own
        // (its sender is held until then, as dropping it would cancel), never recorded cancelled.
        let mut ending_on_their_own = Vec::new();
        for (_, live) in self.live.drain() {
            if live.result_seen.load(Ordering::SeqCst) {
                ending_on_their_own.push(live.cancel);
            } else {
                let _ = live.cancel.send(());
            }
        }
        while self.qa_running > 0 || self.spawns_running > 0 {
            match self.tasks.recv().await {
                Some(TaskDone::Qa) => self.qa_running = self.qa_running.saturating_sub(1),
                Some(TaskDone::Spawn(_)) => {
                    self.spawns_running = self.spawns_running.saturating_sub(1);
                }
                None => break,
            }
        }
        drop(ending_on_their_own);
        let mut data = Map::new();
        data.insert("outcome".into(), json!(done.outcome));
        data.insert("reason".into(), json!(done.reason));
        append(
            &self.writer,
            Draft::new("system", Kind::Done)
                .body(done.reason.clone())
                .data(data)
                .metadata(runner_metadata(&done.id)),
        )?;
        append(
            &self.writer,
            Draft::new("system", Kind::SessionEnd)
                .body(format!("session ended: {}", done.reason))
                .metadata(runner_metadata(&done.id)),
        )?;
        let batch = poll(&mut self.tail, &self.session.dir, self.observer)?;
        let table = Arc::clone(&self.session.table);
        for (line, item) in batch.lines.into_iter().zip(batch.items) {
            if let Some((event, _)) = fold_item(&mut self.replay, &table, line, item, self.observer)
            {
                self.latest.note(&event, &table);
                self.observer.event(&event, &self.replay.state, true);
            }
        }
        let (outcome, reason) = self
            .replay
            .state
            .done
            .as_ref()
            .map_or((Some(done.outcome), done.reason), |d| {
                (d.outcome, d.reason.clone())
            });
        Ok(Some(Ending::Done { outcome, reason }))
    }

    /// The person stopped crumb: kill every live turn and QA run without recording an outcome,
    /// so the session stays resumable exactly where it was.
    pub(super) async fn stop_now(mut self) -> Outcome {
        self.shutdown.store(true, Ordering::SeqCst);
        for (_, live) in self.live.drain() {
            let _ = live.cancel.send(());
        }
        for task in self.qa_tasks.drain(..) {
            task.abort();
        }
        while self.spawns_running > 0 {
            match self.tasks.recv().await {
                Some(TaskDone::Spawn(_)) => self.spawns_running -= 1,
                Some(TaskDone::Qa) => {}
                None => break,
            }
        }
        Outcome {
            ending: Ending::Interrupted,
            state: self.replay.state,
        }
    }
}
