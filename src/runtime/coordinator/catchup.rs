//! The coordinator's start: fold what the transcript already holds, with the same reader rules and
//! the same [`Replay`] as `crumb replay`, `crumb status` and Studio, and work out which effects have
//! no outcome yet (every outcome carries `metadata.effect_id`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::prompt_context::Latest;
use super::{CoordinatorError, Observer};
use crate::engine::Replay;
use crate::engine::effect::Effect;
use crate::engine::replay::Parsed;
use crate::pipeline::table::TransitionTable;
use crate::runtime::session_dir::SessionDir;
use crate::transcript::reader::{LineIssue, Tolerant};
use crate::transcript::tail::Tail;
use crate::transcript::{Event, Kind};

/// Which effects already have outcome events.
#[derive(Default)]
pub(super) struct Outcomes {
    /// Effect ids with a completing event (anything but a bare `agent.wake`). For a spawn this is
    /// not "done": a `note` the adapter wrote when the turn started carries its id too.
    pub(super) completed: HashSet<String>,
    /// Spawn effect ids with an `agent.wake` (started): the latest wake of each.
    pub(super) woken: HashMap<String, Woken>,
    /// Spawn effect ids whose turn was closed by an `agent.stop`. A turn can have its result (the
    /// role's own event) but no stop when its coordinator died in between.
    pub(super) stopped: HashSet<String>,
    /// Spawn effect ids whose turn failed (an `error` from the runner): what comes next is the
    /// engine's answer to that error (a retry is an effect of its own), never this turn again.
    pub(super) failed: HashSet<String>,
}

/// The latest `agent.wake` of a spawn.
pub(super) struct Woken {
    /// The turn's log, relative to the session folder.
    pub(super) log: Option<String>,
    /// The wake event's id (a recovered turn's result must come after it).
    pub(super) wake_id: String,
}

impl Outcomes {
    fn note(&mut self, event: &Event) {
        let Some(id) = event.metadata.as_ref().and_then(|m| m.effect_id.as_deref()) else {
            return;
        };
        if event.kind == Kind::AgentWake {
            let log = event
                .data
                .as_ref()
                .and_then(|d| d.get("log"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let wake_id = event.id.clone();
            self.woken.insert(id.to_owned(), Woken { log, wake_id });
        } else {
            match event.kind {
                Kind::AgentStop => {
                    self.stopped.insert(id.to_owned());
                }
                Kind::Error if event.from == "system" => {
                    self.failed.insert(id.to_owned());
                }
                _ => {}
            }
            self.completed.insert(id.to_owned());
        }
    }
}

/// The transcript as the coordinator found it on start (`crumb run` after a crash, `crumb resume`).
pub struct Catchup {
    /// The fold so far; the coordinator goes on folding into it.
    pub replay: Replay,
    pub(super) tail: Tail<Tolerant>,
    pub(super) latest: Latest,
    pub(super) outcomes: Outcomes,
    /// The inbox offset the transcript says was consumed.
    pub(super) inbox_offset: u64,
    /// Every effect the fold asked for, in order (some already have outcomes).
    pub(super) issued: Vec<Effect>,
    /// A `done` was written but no `session.end` after it: the runner died in between.
    pub(super) unended: bool,
}

impl Catchup {
    /// Fold the whole transcript of `dir` through `table`.
    pub fn read(
        dir: &SessionDir,
        table: &TransitionTable,
        observer: &mut dyn Observer,
    ) -> Result<Catchup, CoordinatorError> {
        let mut catchup = Catchup {
            replay: Replay::new(),
            tail: dir.tail(),
            latest: Latest::default(),
            outcomes: Outcomes::default(),
            inbox_offset: 0,
            issued: Vec::new(),
            unended: false,
        };
        loop {
            let batch = poll(&mut catchup.tail, dir, observer)?;
            for (line, item) in batch.lines.into_iter().zip(batch.items) {
                let Some((event, effects)) =
                    fold_item(&mut catchup.replay, table, line, item, observer)
                else {
                    continue;
                };
                catchup.outcomes.note(&event);
                catchup.inbox_offset = catchup.inbox_offset.max(inbox_offset(&event));
                catchup.latest.note(&event, table);
                catchup.issued.extend(effects);
                match event.kind {
                    Kind::Done => catchup.unended = true,
                    Kind::SessionEnd => catchup.unended = false,
                    _ => {}
                }
                observer.event(&event, &catchup.replay.state, false);
            }
            if !batch.more {
                return Ok(catchup);
            }
        }
    }
}

/// Read what was appended to the transcript.
pub(super) fn poll(
    tail: &mut Tail<Tolerant>,
    dir: &SessionDir,
    observer: &mut dyn Observer,
) -> Result<crate::transcript::tail::Batch<Parsed>, CoordinatorError> {
    let batch = tail.poll().map_err(|source| CoordinatorError::Transcript {
        path: dir.transcript().display().to_string(),
        source,
    })?;
    if batch.truncated {
        observer.warn("the transcript shrank; it was truncated or replaced by someone else");
    }
    Ok(batch)
}

/// Fold one line read by the tail; a skipped line is reported to the observer.
pub(super) fn fold_item(
    replay: &mut Replay,
    table: &TransitionTable,
    line: u64,
    item: Result<Parsed, LineIssue>,
    observer: &mut dyn Observer,
) -> Option<(Event, Vec<Effect>)> {
    let parsed = match item {
        Ok(parsed) => parsed,
        Err(issue) => Parsed::Skip(issue.message),
    };
    match replay.fold_parsed(table, line, parsed) {
        Ok(folded) => folded,
        Err(reason) => {
            observer.warn(&format!(
                "skipping an unreadable transcript line: line {line}: {reason}"
            ));
            None
        }
    }
}

/// The inbox offset an event says was consumed (`data.inbox_offset` of `user.*` events).
pub(super) fn inbox_offset(event: &Event) -> u64 {
    event
        .data
        .as_ref()
        .and_then(|d| d.get("inbox_offset"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}
