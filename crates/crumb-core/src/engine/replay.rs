//! Replay: fold transcript lines through the reducer without running any effect.
//!
//! The caller reads the file (this module does no I/O) and hands over one line at a time. A line
//! that is not one of our events is tried as a legacy line (an older event shape) and mapped where the meaning
//! is clear; anything else — a torn last line, garbage, an unknown kind — is skipped and reported
//! with its line number, and the rest still replays.
//!
//! Lines are read in two steps so long transcripts fold fast: [`prepare_line`] (pure, any thread)
//! checks a line and notes where its fields lie, and [`Replay::feed_prepared`] copies them into one
//! reused event and folds it (see [`crate::transcript::borrowed_line`]). Whatever that fast path
//! does not take goes through [`parse_line`], the strict parser; a property test holds both to the same result.
//!
//! Every reader that folds a session (replay and status, the coordinator on resume, Studio) folds
//! through a [`Replay`], so they skip and report the same lines. One rule lives here rather than in
//! the line parser because it needs memory: **an event whose id was folded among the last
//! [`RECENT_IDS`] events is a duplicate**, skipped and reported. Our writer's ids increase (except
//! right after a line it ignored as far ahead of the clock), so the common line costs one
//! comparison with the highest id so far; only an id at or below it is looked up. The window is bounded (not every id ever seen) because legacy transcripts
//! are not monotonic (ULIDs minted in the same millisecond by different processes) and a set of a
//! million ids would cost more memory than the whole replay.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::effect::Effect;
use super::state::{State, clip};
use crate::pipeline::table::TransitionTable;
use crate::transcript::borrowed_line::Scratch;
pub use crate::transcript::parse::{Parsed, Prepared, parse_line, prepare_line};
use crate::transcript::{Event, Kind};

/// Most skipped lines reported individually (the rest are only counted).
const MAX_REPORTED: usize = 50;
/// How many of the latest folded ids the duplicate check remembers.
pub const RECENT_IDS: usize = 256;

/// A fold in progress.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replay {
    pub state: State,
    pub stats: ReplayStats,
    #[serde(skip)]
    scratch: Scratch,
    #[serde(skip)]
    ids: RecentIds,
}

/// The ids of the latest folded events, for the duplicate rule (see the module docs). Serialised
/// as it is (ring, next slot, highest id) so a fold resumed from a snapshot evicts the same ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentIds {
    /// The last [`RECENT_IDS`] ids, overwritten in place (their buffers are reused).
    ring: Vec<String>,
    next: usize,
    /// The highest id folded so far.
    max: String,
}

impl RecentIds {
    /// Remember `id` and return true, or return false when it is a duplicate.
    pub fn admit(&mut self, id: &str) -> bool {
        if id > self.max.as_str() {
            self.max.clear();
            self.max.push_str(id);
        } else if self.ring.iter().any(|seen| seen == id) {
            return false;
        }
        if self.ring.len() < RECENT_IDS {
            self.ring.push(id.to_owned());
        } else {
            let slot = &mut self.ring[self.next];
            slot.clear();
            slot.push_str(id);
        }
        self.next = (self.next + 1) % RECENT_IDS;
        true
    }

    /// Whether this could have been built by [`RecentIds::admit`] (a deserialised one is checked).
    pub fn is_consistent(&self) -> bool {
        let full = self.ring.len() == RECENT_IDS;
        self.ring.len() <= RECENT_IDS
            && self.next < RECENT_IDS
            && (full || self.next == self.ring.len())
            && self.ring.iter().all(|id| id.as_str() <= self.max.as_str())
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
    pub fn feed_line(&mut self, table: &TransitionTable, line_no: u64, line: &[u8]) -> bool {
        match std::str::from_utf8(line) {
            Ok(text) => self.feed_prepared(table, line_no, text, prepare_line(text, table)),
            Err(_) => self.feed_parsed(table, line_no, parse_line(line)),
        }
    }

    /// Fold `line`, already looked at by [`prepare_line`] (possibly on another thread). Returns
    /// whether the line was folded as an event.
    pub fn feed_prepared(
        &mut self,
        table: &TransitionTable,
        line_no: u64,
        line: &str,
        mut prepared: Prepared,
    ) -> bool {
        self.fold_prepared(table, line_no, line, &mut prepared)
    }

    /// [`Replay::feed_prepared`] with the line left in place: what the reused event held before
    /// is left in `prepared`, so a caller that frees its batches on another thread frees it there.
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
        self.feed_parsed(table, line_no, parsed)
    }

    /// Fold a line parsed by [`parse_line`]. Returns whether the line was folded as an event.
    pub fn feed_parsed(&mut self, table: &TransitionTable, line_no: u64, parsed: Parsed) -> bool {
        self.fold_parsed(table, line_no, parsed).is_some()
    }

    /// Fold a line parsed by [`parse_line`] and hand back the event it folded, if any (Studio
    /// looks at it next to the state it led to).
    pub fn fold_parsed(
        &mut self,
        table: &TransitionTable,
        line_no: u64,
        parsed: Parsed,
    ) -> Option<Event> {
        self.fold_line(table, line_no, parsed)
            .ok()
            .flatten()
            .map(|(event, _)| event)
    }

    /// Fold a line parsed by [`parse_line`]: `Ok(Some)` with the event and the effects the reducer
    /// asked for (the coordinator runs them), `Ok(None)` for a blank line, `Err(reason)` for a
    /// skipped one (already counted and reported in the stats).
    pub fn fold_line(
        &mut self,
        table: &TransitionTable,
        line_no: u64,
        parsed: Parsed,
    ) -> Result<Option<(Event, Vec<Effect>)>, String> {
        self.stats.lines += 1;
        let event = match parsed {
            Parsed::Blank => return Ok(None),
            Parsed::Skip(reason) => {
                self.skip_line(line_no, &reason);
                return Err(reason);
            }
            Parsed::Event(event) => event,
            Parsed::Mapped(event, changes) => {
                if !table.accepts_kind(event.kind) {
                    return Err(self.skip_undeclared(line_no, event.kind));
                }
                if !self.ids.admit(&event.id) {
                    return Err(self.skip_duplicate(line_no, &event.id));
                }
                self.stats.mapped += 1;
                for change in changes {
                    *self.stats.mapping_changes.entry(change).or_default() += 1;
                }
                let effects = self.apply(table, &event);
                return Ok(Some((event, effects)));
            }
        };
        if !table.accepts_kind(event.kind) {
            return Err(self.skip_undeclared(line_no, event.kind));
        }
        if !self.ids.admit(&event.id) {
            return Err(self.skip_duplicate(line_no, &event.id));
        }
        let effects = self.apply(table, &event);
        Ok(Some((event, effects)))
    }

    /// Fold one event (the duplicate rule is the line readers' business, not this one's).
    pub fn feed_event(&mut self, table: &TransitionTable, event: &Event) {
        self.apply(table, event);
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
    pub fn skip_line(&mut self, line: u64, reason: &str) {
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

/// The reason a duplicate is skipped, worded the same by every reader.
pub fn duplicate(id: &str) -> String {
    format!(
        "duplicate id {} (an event with this id was already folded)",
        clip(id, 40)
    )
}

#[cfg(test)]
mod tests {
    use super::{RECENT_IDS, RecentIds};

    #[test]
    fn a_recent_id_is_a_duplicate_and_out_of_order_new_ids_are_not() {
        let mut ids = RecentIds::default();
        assert!(ids.admit("01B"));
        assert!(ids.admit("01A"), "below the highest id but never seen");
        assert!(!ids.admit("01B"));
        assert!(!ids.admit("01A"));
        assert!(ids.admit("01C"));
    }

    #[test]
    fn the_window_is_bounded() {
        let mut ids = RecentIds::default();
        for n in 0..=RECENT_IDS {
            assert!(ids.admit(&format!("{n:08}")));
        }
        assert!(
            ids.admit(&format!("{:08}", 0)),
            "the oldest id has left the window"
        );
        assert!(!ids.admit(&format!("{RECENT_IDS:08}")));
    }
}
