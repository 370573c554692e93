//! Replay: fold transcript lines through the reducer without running any effect.
//!
//! The caller reads the file (this module does no I/O) and hands over one line at a time. A line
//! that is not one of our events is tried as a legacy (reference) line and mapped where the meaning
//! is clear; anything else — a torn last line, garbage, an unknown kind — is skipped and reported
//! with its line number, and the rest still replays.
//!
//! Lines are read in two steps so long transcripts fold fast: [`prepare_line`] (pure, any thread)
//! checks a line and notes where its fields lie, and [`Replay::feed_prepared`] copies them into one
//! reused event and folds it (see [`crate::transcript::borrowed_line`]). Whatever that fast path does not take goes
//! through [`parse_line`], the strict parser; a property test holds both to the same result.

use std::collections::BTreeMap;

use serde::Serialize;

use super::state::{State, clip};
use crate::pipeline::table::TransitionTable;
use crate::transcript::Event;
use crate::transcript::borrowed_line::Scratch;
pub use crate::transcript::parse::{Parsed, Prepared, parse_line, prepare_line};

/// Most skipped lines reported individually (the rest are only counted).
const MAX_REPORTED: usize = 50;

/// A fold in progress.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replay {
    pub state: State,
    pub stats: ReplayStats,
    #[serde(skip)]
    scratch: Scratch,
}

/// What the replay read.
#[derive(Debug, Clone, Default, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: u64,
    pub reason: String,
}

impl Replay {
    pub fn new() -> Self {
        Replay::default()
    }

    /// Fold one transcript line (without its newline). `line_no` is 1-based. Returns whether
    /// the line was folded as an event.
    pub fn feed_line(&mut self, table: &TransitionTable, line_no: u64, line: &[u8]) -> bool {
        match std::str::from_utf8(line) {
            Ok(text) => self.feed_prepared(table, line_no, text, prepare_line(text)),
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
        prepared: Prepared,
    ) -> bool {
        match prepared {
            Prepared::Spans(spans) => {
                if let Some(event) = self.scratch.fill(line, &spans) {
                    self.stats.lines += 1;
                    self.stats.events += 1;
                    let effects = self.state.apply(table, event);
                    self.stats.effects += effects.len() as u64;
                    return true;
                }
                self.feed_parsed(table, line_no, parse_line(line.as_bytes()))
            }
            Prepared::Strict => self.feed_parsed(table, line_no, parse_line(line.as_bytes())),
            Prepared::Blank => self.feed_parsed(table, line_no, Parsed::Blank),
            Prepared::Skip(reason) => self.feed_parsed(table, line_no, Parsed::Skip(reason)),
        }
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
        self.stats.lines += 1;
        match parsed {
            Parsed::Blank => None,
            Parsed::Event(event) => {
                self.feed_event(table, &event);
                Some(event)
            }
            Parsed::Mapped(event, changes) => {
                self.stats.mapped += 1;
                for change in changes {
                    *self.stats.mapping_changes.entry(change).or_default() += 1;
                }
                self.feed_event(table, &event);
                Some(event)
            }
            Parsed::Skip(reason) => {
                self.skip_line(line_no, &reason);
                None
            }
        }
    }

    /// Fold one event.
    pub fn feed_event(&mut self, table: &TransitionTable, event: &Event) {
        self.stats.events += 1;
        let effects = self.state.apply(table, event);
        self.stats.effects += effects.len() as u64;
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
