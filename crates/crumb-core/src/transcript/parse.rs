//! One transcript line, read: the strict parser ([`parse_line`], our envelope then legacy shapes)
//! and the fast look ([`prepare_line`]) that replay's workers run before the fold.
//!
//! Both are pure and allocate as little as they can; a property test in the engine holds the two
//! ways to the same fold.

use crate::transcript::Event;
use crate::transcript::borrowed_line::{self, LineSpans};
use crate::transcript::legacy;
use crate::transcript::payload::{self, SlotKinds};

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

/// A line as [`prepare_line`] left it for `Replay::fold_prepared`.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "nearly every line is `Spans`: boxing it would allocate per line"
)]
pub enum Prepared {
    /// One of our events, checked; its fields are places in the line (and `data`, built).
    Spans(LineSpans),
    /// What [`parse_line`] made of a line the fast path does not take (a legacy line, a line in
    /// error), parsed on the reading thread so the folding thread only folds it. Boxed: such
    /// lines are rare, and a batch holds every line's `Prepared` at once.
    Parsed(Box<Parsed>),
    /// Empty or whitespace only.
    Blank,
    /// Unusable, with why.
    Skip(String),
}

/// Look at one transcript line (without its newline) the fast way: check it and note where its
/// fields lie ([`borrowed_line::spans`]), building only the `data` the engine reads in a session
/// whose pipeline declares `slots`. Anything the fast path does not accept goes through [`parse_line`] here, so both
/// ways fold exactly the same events. Pure, so replay reads lines on several threads and folds
/// them in order on one.
pub fn prepare_line(line: &str, slots: &impl SlotKinds) -> Prepared {
    let trimmed = line.strip_prefix('\u{feff}').unwrap_or(line);
    let trimmed = trimmed.strip_suffix('\r').unwrap_or(trimmed);
    if trimmed.bytes().all(|b| b.is_ascii_whitespace()) {
        return Prepared::Blank;
    }
    borrowed_line::spans(line, trimmed, |kind| payload::reads_data_for(slots, kind)).map_or_else(
        || Prepared::Parsed(Box::new(parse_line(line.as_bytes()))),
        Prepared::Spans,
    )
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
        Ok(_) => parse_legacy(line, &"scores under data"),
        Err(typed) => parse_legacy(line, &typed),
    }
}

/// Try a line that is not our envelope as a line in an older shape (`why` is worded only when the
/// line is skipped: most such lines map).
fn parse_legacy(line: &[u8], why: &dyn std::fmt::Display) -> Parsed {
    match serde_json::from_slice::<serde_json::Value>(line) {
        Err(syntax) => Parsed::Skip(format!("not JSON ({syntax})")),
        Ok(value) => match legacy::map(value) {
            Ok(mapped) => Parsed::Mapped(mapped.event, mapped.changes),
            Err(_) => Parsed::Skip(format!("not an event ({why})")),
        },
    }
}
