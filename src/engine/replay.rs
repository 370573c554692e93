//! Replay: fold transcript lines through the reducer without running any effect.
//!
//! The caller reads the file (this module does no I/O) and hands over one line at a time. A line
//! that is not one of our events is tried as a legacy (reference) line and mapped where the meaning
//! is clear; anything else — a torn last line, garbage, an unknown kind — is skipped and reported
//! with its line number, and the rest still replays.

use std::collections::BTreeMap;

use serde::Serialize;

use super::legacy;
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

    /// Fold one transcript line (without its newline). `line_no` is 1-based.
    pub fn feed_line(&mut self, table: &TransitionTable, line_no: u64, line: &str) {
        self.stats.lines += 1;
        let line = line
            .strip_prefix('\u{feff}')
            .unwrap_or(line)
            .trim_end_matches('\r');
        if line.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(event) if !legacy::has_data_scores(&event) => self.feed_event(table, &event),
            Ok(_) => self.feed_legacy(table, line_no, line, "scores under data"),
            Err(typed) => self.feed_legacy(table, line_no, line, &typed.to_string()),
        }
    }

    /// Try a line that is not our envelope as a legacy (reference) line.
    fn feed_legacy(&mut self, table: &TransitionTable, line_no: u64, line: &str, why: &str) {
        match serde_json::from_str::<serde_json::Value>(line) {
            Err(syntax) => self.skip_line(line_no, &format!("not JSON ({syntax})")),
            Ok(value) => match legacy::map(value) {
                Ok(mapped) => {
                    self.stats.mapped += 1;
                    for change in mapped.changes {
                        *self.stats.mapping_changes.entry(change).or_default() += 1;
                    }
                    self.feed_event(table, &mapped.event);
                }
                Err(_) => self.skip_line(line_no, &format!("not an event ({why})")),
            },
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
