//! Replay: fold transcript lines through the reducer without running any effect.
//!
//! The caller reads the file (this module does no I/O) and hands over one line at a time. A line
//! that is not one of our events is tried as a legacy (reference) line and mapped where the meaning
//! is clear; anything else — a torn last line, garbage, an unknown kind — is skipped and reported
//! with its line number, and the rest still replays.
//!
//! Lines are read in two steps so long transcripts fold fast: [`prepare_line`] (pure, any thread)
//! checks a line and notes where its fields lie, and [`Replay::feed_prepared`] copies them into one
//! reused event and folds it (see `engine::line`). Whatever that fast path does not take goes
//! through [`parse_line`], the strict parser; a property test holds both to the same result.

use std::collections::BTreeMap;

use serde::Serialize;

use super::legacy;
use super::line::{LineRef, LineSpans, Scratch};
use super::state::{State, clip};
use crate::pipeline::table::TransitionTable;
use crate::transcript::Event;

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

/// One line, read.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per line being folded; boxing would allocate per event"
)]
pub enum Parsed {
    /// Empty or whitespace only.
    Blank,
    /// One of our events.
    Event(Event),
    /// A legacy line mapped onto our envelope, with what had to change.
    Mapped(Event, Vec<String>),
    /// Unusable, with why.
    Skip(String),
}

/// A line as [`prepare_line`] left it for [`Replay::feed_prepared`].
#[derive(Debug, Clone)]
pub enum Prepared {
    /// One of our events, checked; its fields are places in the line.
    Spans(LineSpans),
    /// For [`parse_line`], run by the folding thread so the event it allocates is freed there.
    Strict,
    /// Empty or whitespace only.
    Blank,
    /// Unusable, with why.
    Skip(String),
}

/// Look at one transcript line (without its newline) the fast way: check it and note where its
/// fields lie, allocating nothing (`LineRef`). Lines whose `data` the engine reads, and anything
/// the fast path does not accept, are left to [`parse_line`], so both ways fold exactly the same
/// events. Pure, so replay reads lines on several threads and folds them in order on one.
pub fn prepare_line(line: &str) -> Prepared {
    let trimmed = line.strip_prefix('\u{feff}').unwrap_or(line);
    let trimmed = trimmed.strip_suffix('\r').unwrap_or(trimmed);
    if trimmed.bytes().all(|b| b.is_ascii_whitespace()) {
        return Prepared::Blank;
    }
    LineRef::spans(line, trimmed).map_or(Prepared::Strict, Prepared::Spans)
}

/// A line without a leading byte-order mark or a trailing CR.
fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Parse one transcript line (without its newline) into an owned event: our envelope first, then
/// legacy shapes.
pub fn parse_line(line: &[u8]) -> Parsed {
    let line = trim(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Blank;
    }
    match serde_json::from_slice::<Event>(line) {
        Ok(event) if !legacy::has_data_scores(&event) => Parsed::Event(event),
        Ok(_) => parse_legacy(line, "scores under data"),
        Err(typed) => parse_legacy(line, &typed.to_string()),
    }
}

/// Try a line that is not our envelope as a legacy (reference) line.
fn parse_legacy(line: &[u8], why: &str) -> Parsed {
    match serde_json::from_slice::<serde_json::Value>(line) {
        Err(syntax) => Parsed::Skip(format!("not JSON ({syntax})")),
        Ok(value) => match legacy::map(value) {
            Ok(mapped) => Parsed::Mapped(mapped.event, mapped.changes),
            Err(_) => Parsed::Skip(format!("not an event ({why})")),
        },
    }
}
