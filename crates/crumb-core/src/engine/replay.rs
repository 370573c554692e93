//! Replay: fold transcript lines through the reducer without running any effect.
//!
//! The caller reads the file (this module does no I/O; lines come from
//! [`crate::transcript::framer`]) and hands over one line at a time. A line that is not one of our
//! events is tried as a legacy line (an older event shape) and mapped where the meaning is clear;
//! anything else — a torn last line, garbage, an unknown kind, a duplicate id
//! ([`crate::transcript::recent_ids`]) — is skipped and reported with its line number, and the rest
//! still replays.
//!
//! Lines are read in two steps so long transcripts fold fast: [`prepare_line`] (pure, any thread)
//! checks a line and notes where its fields lie, and [`Replay::fold_prepared`] copies them into one
//! reused event and folds it (see [`crate::transcript::borrowed_line`]). Whatever that fast path
//! does not take goes through [`parse_line`], the strict parser; a property test holds both to the
//! same result.
//!
//! Every reader that folds a session (replay and status, the coordinator on resume, Studio) folds
//! through a [`Replay`], so they skip and report the same lines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::effect::Effect;
use super::state::{State, clip};
use crate::pipeline::table::TransitionTable;
use crate::transcript::borrowed_line::Scratch;
pub use crate::transcript::parse::{Parsed, Prepared, parse_line, prepare_line};
use crate::transcript::payload::SlotKinds;
use crate::transcript::recent_ids::{RecentIds, duplicate};
use crate::transcript::{Event, Kind};

/// Most skipped lines reported individually (the rest are only counted).
const MAX_REPORTED: usize = 50;

/// A fold in progress.
///
/// Four ways in, one per kind of caller:
/// - [`Replay::fold_line`]: one framed line's bytes — the plain reader (state snapshots, tests).
/// - [`Replay::fold_prepared`]: a line a worker thread already looked at with [`prepare_line`] —
///   the chunked parallel reader, whose speed depends on preparing off the folding thread.
/// - [`Replay::fold_parsed`]: a line the tail decoded with [`parse_line`], handing back the event
///   and its effects — the coordinator catching up (it runs the effects) and Studio (it shows the
///   event next to the state).
/// - [`Replay::fold_event`]: an event that never was a line here — the live coordinator's own
///   events and export.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replay {
    pub state: State,
    pub stats: ReplayStats,
    #[serde(skip)]
    scratch: Scratch,
    #[serde(skip)]
    ids: RecentIds,
}

/// A compiled table tells the transcript layer which kinds fill a slot, so [`prepare_line`] builds
/// `data` only where the engine reads it.
impl SlotKinds for TransitionTable {
    fn fills_slot(&self, kind: &str) -> bool {
        self.slot(kind).is_some()
    }
}

/// What the replay read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayStats {
    /// Lines read, blank ones included.
    pub lines: u64,
    /// Events folded (ours and mapped legacy lines).
    pub events: u64,
    /// Lines that were not our envelope but mapped from a legacy shape.
    pub mapped: u64,
    /// How often each kind of legacy change was needed (`dropped metadata.preset` → 3).
    pub mapping_changes: BTreeMap<String, u64>,
    /// Lines that could not be read at all.
    pub skipped: u64,
    /// The first skipped lines, with why.
    pub skipped_lines: Vec<SkippedLine>,
    /// Effects the reducer asked for (not run).
    pub effects: u64,
}

/// A line replay could not use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: u64,
    pub reason: String,
}

impl Replay {
    pub fn new() -> Self {
        Replay::default()
    }

    /// A fold that goes on from `state`, `stats` and `ids` (see [`super::fold_snapshot`]).
    pub(crate) fn from_parts(state: State, read: ReplayStats, ids: RecentIds) -> Self {
        Replay {
            state,
            stats: read,
            scratch: Scratch::default(),
            ids,
        }
    }

    /// The duplicate rule's memory (see [`super::fold_snapshot`]).
    pub(crate) fn recent_ids(&self) -> &RecentIds {
        &self.ids
    }

    /// Fold one transcript line (without its newline). `line_no` is 1-based. Returns whether
    /// the line was folded as an event.
    pub fn fold_line(&mut self, table: &TransitionTable, line_no: u64, line: &[u8]) -> bool {
        match std::str::from_utf8(line) {
            Ok(text) => self.fold_prepared(table, line_no, text, &mut prepare_line(text, table)),
            Err(_) => self
                .fold_parsed(table, line_no, parse_line(line))
                .is_ok_and(|folded| folded.is_some()),
        }
    }

    /// Fold `line`, already looked at by [`prepare_line`] (possibly on another thread), leaving
    /// what the reused event held before in `prepared`, so a caller that frees its batches on
    /// another thread frees it there. Returns whether the line was folded as an event.
    pub fn fold_prepared(
        &mut self,
        table: &TransitionTable,
        line_no: u64,
        line: &str,
        prepared: &mut Prepared,
    ) -> bool {
        let parsed = match prepared {
            Prepared::Spans(spans) => {
                let mapped = spans.mapped();
                if let Some(event) = self.scratch.fill(line, spans) {
                    self.stats.lines += 1;
                    if !table.accepts_kind(event.kind) {
                        let reason = undeclared(event.kind);
                        self.skip_line(line_no, &reason);
                        return false;
                    }
                    if !self.ids.admit(&event.id) {
                        let reason = duplicate(&event.id);
                        self.skip_line(line_no, &reason);
                        return false;
                    }
                    if let Some(changes) = mapped {
                        self.stats.mapped += 1;
                        for change in changes {
                            *self.stats.mapping_changes.entry(change).or_default() += 1;
                        }
                    }
                    self.stats.events += 1;
                    let effects = self.state.apply(table, event);
                    self.stats.effects += effects.len() as u64;
                    return true;
                }
                parse_line(line.as_bytes())
            }
            Prepared::Parsed(parsed) => std::mem::replace(&mut **parsed, Parsed::Blank),
            Prepared::Blank => Parsed::Blank,
            Prepared::Skip(reason) => Parsed::Skip(std::mem::take(reason)),
        };
        self.fold_parsed(table, line_no, parsed)
            .is_ok_and(|folded| folded.is_some())
    }

    /// Fold a line parsed by [`parse_line`]: `Ok(Some)` with the event and the effects the reducer
    /// asked for (the coordinator runs them), `Ok(None)` for a blank line, `Err(reason)` for a
    /// skipped one (already counted and reported in the stats).
    pub fn fold_parsed(
        &mut self,
        table: &TransitionTable,
        line_no: u64,
        parsed: Parsed,
    ) -> Result<Option<(Event, Vec<Effect>)>, String> {
        self.stats.lines += 1;
        let (event, changes) = match parsed {
            Parsed::Blank => return Ok(None),
            Parsed::Skip(reason) => {
                self.skip_line(line_no, &reason);
                return Err(reason);
            }
            Parsed::Event(event) => (event, None),
            Parsed::Mapped(event, changes) => (event, Some(changes)),
        };
        if !table.accepts_kind(event.kind) {
            return Err(self.skip_undeclared(line_no, event.kind));
        }
        if !self.ids.admit(&event.id) {
            return Err(self.skip_duplicate(line_no, &event.id));
        }
        if let Some(changes) = changes {
            self.stats.mapped += 1;
            for change in changes {
                *self.stats.mapping_changes.entry(change).or_default() += 1;
            }
        }
        let effects = self.apply(table, &event);
        Ok(Some((event, effects)))
    }

    /// Fold one event (the duplicate rule is the line readers' business, not this one's).
    /// Fold `event`; returns the effects the reducer asked for (a story observes them).
    pub fn fold_event(&mut self, table: &TransitionTable, event: &Event) -> Vec<Effect> {
        self.apply(table, event)
    }

    fn apply(&mut self, table: &TransitionTable, event: &Event) -> Vec<Effect> {
        self.stats.events += 1;
        let effects = self.state.apply(table, event);
        self.stats.effects += effects.len() as u64;
        effects
    }

    fn skip_undeclared(&mut self, line_no: u64, kind: Kind) -> String {
        let reason = undeclared(kind);
        self.skip_line(line_no, &reason);
        reason
    }

    fn skip_duplicate(&mut self, line_no: u64, id: &str) -> String {
        let reason = duplicate(id);
        self.skip_line(line_no, &reason);
        reason
    }

    /// Record a line that could not be used.
    fn skip_line(&mut self, line: u64, reason: &str) {
        self.stats.skipped += 1;
        if self.stats.skipped_lines.len() < MAX_REPORTED {
            self.stats.skipped_lines.push(SkippedLine {
                line,
                reason: clip(reason, 200),
            });
        }
    }
}

/// The reason a line of a kind the session's pipeline does not declare is skipped.
pub fn undeclared(kind: Kind) -> String {
    format!(
        "unknown event kind `{kind}`: not in the vocabulary and the session's pipeline does not declare it (`kinds:`)"
    )
}
