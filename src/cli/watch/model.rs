//! What `crumb watch` shows, kept up to date from the tail of the transcript: each poll folds
//! only the lines appended since the last one through the engine, as replay does, and keeps the
//! latest events for the feed.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};

use crate::engine::replay::Replay;
use crate::pipeline::table::TransitionTable;
use crate::runtime::session_dir::SessionDir;
use crate::transcript::reader::Typed;
use crate::transcript::tail::Tail;
use crate::transcript::{Event, Kind};

/// Events kept for the feed (the screen shows as many as fit).
const FEED: usize = 200;
/// How much of the end of the live turn's log the feed shows.
const LOG_TAIL_BYTES: u64 = 4096;

/// A watched session.
pub(crate) struct Model {
    pub session: SessionDir,
    pub table: TransitionTable,
    pub replay: Replay,
    tail: Tail<Typed>,
    /// The latest events, oldest first.
    pub recent: VecDeque<Event>,
    /// The role the latest `agent.wake` woke, while its turn runs.
    live_role: Option<String>,
    /// Each verification's corrected verdict, oldest first: the story of the rounds.
    pub rounds: Vec<String>,
    /// `session.end` was read.
    pub ended: bool,
}

impl Model {
    pub(crate) fn open(session: SessionDir) -> Result<Model, String> {
        let table = session.table().map_err(|e| e.to_string())?;
        let tail = Tail::new(session.transcript());
        Ok(Model {
            session,
            table,
            replay: Replay::new(),
            tail,
            recent: VecDeque::new(),
            live_role: None,
            rounds: Vec::new(),
            ended: false,
        })
    }

    /// Fold what was appended since the last poll; the new events, in file order.
    pub(crate) fn poll(&mut self) -> Result<Vec<Event>, String> {
        let mut fresh = Vec::new();
        loop {
            let batch = self.tail.poll().map_err(|e| e.to_string())?;
            if batch.truncated {
                self.replay = Replay::new();
                self.recent.clear();
                self.rounds.clear();
            }
            for event in batch.items.into_iter().flatten() {
                self.replay.fold_event(&self.table, &event);
                match event.kind {
                    Kind::AgentWake => self.live_role = Some(event.from.clone()),
                    Kind::AgentStop => self.live_role = None,
                    Kind::SessionEnd => self.ended = true,
                    _ if self.replay.state.verification.count as usize > self.rounds.len() => {
                        if let Some(latest) = &self.replay.state.verification.latest {
                            self.rounds.push(format!(
                                "{} × {}",
                                latest.corrected.verdict, latest.severity
                            ));
                        }
                    }
                    _ => {}
                }
                if self.recent.len() == FEED {
                    self.recent.pop_front();
                }
                self.recent.push_back(event.clone());
                fresh.push(event);
            }
            if !batch.more {
                return Ok(fresh);
            }
        }
    }

    /// The running turn's role and the last `lines` lines of its log, if a turn runs.
    pub(crate) fn live_log(&self, lines: usize) -> Option<(String, Vec<String>)> {
        let role = self.live_role.clone()?;
        let spawns = self.replay.state.roles.get(&role).map_or(0, |r| r.spawns);
        let path = self.session.log_path(&role, spawns.max(1));
        let mut file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)))
            .ok()?;
        let mut bytes = Vec::new();
        file.take(LOG_TAIL_BYTES).read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let shown = all[all.len().saturating_sub(lines)..]
            .iter()
            .map(|l| (*l).to_owned())
            .collect();
        Some((role, shown))
    }
}
