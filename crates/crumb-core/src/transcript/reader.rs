//! Streaming transcript reader: one line at a time, never the whole file.
//!
//! A torn or invalid line is skipped and reported as a [`LineIssue`] with its line number and byte
//! offset; it never aborts the read (a reader that died on the first bad line would make
//! replay and resume impossible). Tolerates a missing final newline, CRLF, a UTF-8 BOM and blank
//! lines.
//!
//! Everything that folds a session into state (replay, status, resume's coordinator, Studio) reads
//! lines with [`Tolerant`] — the classification of [`crate::transcript::parse::parse_line`] — and
//! the one line limit [`MAX_LINE_BYTES`], then folds them through `engine::Replay`, which also
//! applies the duplicate-id rule. [`Typed`] is the stricter view for tools that want only
//! well-formed events of our own (the mock agent, the dispatcher's look-backs).

use std::io::{self, BufRead};

use serde::de::DeserializeOwned;

use super::event::Event;
use super::parse::{Parsed, parse_line};
use super::validate::check_event;

/// Longest transcript line any reader parses (64 MiB): the one limit shared by replay's chunked
/// reader, this reader, the live tail and Studio's index. Longer lines are skipped (and reported)
/// without being buffered, so a hostile file cannot make a reader allocate without bound.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Why a line over [`MAX_LINE_BYTES`] was skipped, worded the same by every reader.
pub fn too_long(len: u64) -> String {
    format!("line is {len} bytes, longer than the {MAX_LINE_BYTES}-byte limit; skipped")
}

/// A line that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIssue {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the start of the line.
    pub byte_offset: u64,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for LineIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.byte_offset, self.message
        )
    }
}

/// How a line's bytes become an item.
pub trait LineDecoder {
    type Item;
    fn decode(line: &[u8]) -> Result<Self::Item, String>;
}

/// Decode lines as typed, checked [`Event`]s.
pub struct Typed;

impl LineDecoder for Typed {
    type Item = Event;
    fn decode(line: &[u8]) -> Result<Event, String> {
        let event: Event = decode_json(line)?;
        let problems = check_event(&event);
        if problems.is_empty() {
            Ok(event)
        } else {
            Err(problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "))
        }
    }
}

/// Decode lines as raw JSON values (foreign or legacy transcripts).
pub struct Raw;

impl LineDecoder for Raw {
    type Item = serde_json::Value;
    fn decode(line: &[u8]) -> Result<serde_json::Value, String> {
        decode_json(line)
    }
}

/// Classify lines as every folding reader does ([`parse_line`]): our envelope, a mapped legacy
/// line, or a line to skip with its reason. Never an error: a skip is a [`Parsed::Skip`].
pub struct Tolerant;

impl LineDecoder for Tolerant {
    type Item = Parsed;
    fn decode(line: &[u8]) -> Result<Parsed, String> {
        Ok(parse_line(line))
    }
}

fn decode_json<T: DeserializeOwned>(line: &[u8]) -> Result<T, String> {
    let line = line.strip_prefix(BOM).unwrap_or(line);
    serde_json::from_slice(line).map_err(|e| match e.classify() {
        serde_json::error::Category::Eof => format!("incomplete JSON (a torn line?): {e}"),
        serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
            format!("not JSON: {e}")
        }
        serde_json::error::Category::Data => format!("not a valid event: {e}"),
    })
}

/// A UTF-8 byte-order mark. One at the start of any line is ignored, by every decoder (for
/// [`Tolerant`], by [`parse_line`]), so a BOM is stripped exactly once whichever reader reads it.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Strip a line terminator (`\n` or `\r\n`); the decoders strip a leading BOM.
pub fn clean_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Whether a line holds nothing but whitespace.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Decode one complete line; `None` for a blank line.
pub fn decode_line<D: LineDecoder>(
    raw: &[u8],
    line: u64,
    byte_offset: u64,
) -> Option<Result<D::Item, LineIssue>> {
    let cleaned = clean_line(raw);
    if is_blank(cleaned.strip_prefix(BOM).unwrap_or(cleaned)) {
        return None;
    }
    Some(D::decode(cleaned).map_err(|message| LineIssue {
        line,
        byte_offset,
        message,
    }))
}

/// Iterates the lines of a transcript: `Ok(item)` per good line, `Err(LineIssue)` per bad one.
/// An I/O error ends the iteration after being reported once as an issue.
pub struct Reader<R, D = Typed> {
    input: R,
    line: u64,
    offset: u64,
    buf: Vec<u8>,
    done: bool,
    decoder: std::marker::PhantomData<D>,
}

impl<R: BufRead> Reader<R, Typed> {
    /// A reader yielding typed events.
    pub fn new(input: R) -> Self {
        Reader::with_decoder(input)
    }
}

impl<R: BufRead> Reader<R, Raw> {
    /// A reader yielding raw JSON values.
    pub fn raw(input: R) -> Self {
        Reader::with_decoder(input)
    }
}

impl<R: BufRead> Reader<R, Tolerant> {
    /// A reader classifying lines as every folding reader does ([`Tolerant`]).
    pub fn tolerant(input: R) -> Self {
        Reader::with_decoder(input)
    }
}

impl<R: BufRead, D: LineDecoder> Reader<R, D> {
    fn with_decoder(input: R) -> Self {
        Reader {
            input,
            line: 0,
            offset: 0,
            buf: Vec::new(),
            done: false,
            decoder: std::marker::PhantomData,
        }
    }

    /// Bytes consumed so far (where a tail should continue).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Lines consumed so far.
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    /// Read the next line into `buf`, up to [`MAX_LINE_BYTES`]. Returns the number of bytes
    /// consumed and whether the line was too long (its content then discarded).
    fn read_line(&mut self) -> io::Result<(usize, bool)> {
        self.buf.clear();
        let mut consumed = 0usize;
        let mut overflow = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok((consumed, overflow));
            }
            let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..=i], true),
                None => (available, false),
            };
            let used = chunk.len();
            if !overflow && self.buf.len() + used > MAX_LINE_BYTES {
                overflow = true;
                self.buf.clear();
            }
            if !overflow {
                self.buf.extend_from_slice(chunk);
            }
            self.input.consume(used);
            consumed += used;
            if found {
                return Ok((consumed, overflow));
            }
        }
    }
}

impl<R: BufRead, D: LineDecoder> Iterator for Reader<R, D> {
    type Item = Result<D::Item, LineIssue>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let start = self.offset;
            let (consumed, overflow) = match self.read_line() {
                Ok(read) => read,
                Err(e) => {
                    self.done = true;
                    return Some(Err(LineIssue {
                        line: self.line + 1,
                        byte_offset: start,
                        message: format!("read error: {e}"),
                    }));
                }
            };
            if consumed == 0 {
                self.done = true;
                return None;
            }
            self.line += 1;
            self.offset += consumed as u64;
            if overflow {
                return Some(Err(LineIssue {
                    line: self.line,
                    byte_offset: start,
                    message: too_long(consumed as u64),
                }));
            }
            if let Some(item) = decode_line::<D>(&self.buf, self.line, start) {
                return Some(item);
            }
        }
        None
    }
}

/// Read a whole transcript file with the rules every folding reader uses ([`Tolerant`]): our
/// events and mapped legacy lines, in file order, and an issue for each skipped line. A missing
/// file is an empty transcript.
#[allow(
    clippy::disallowed_types,
    reason = "the last file read in the core; the framer's branch moves it to the `crumb` crate"
)]
pub fn read_path(path: &std::path::Path) -> io::Result<(Vec<Event>, Vec<LineIssue>)> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e),
    };
    let mut events = Vec::new();
    let mut issues = Vec::new();
    each_event(
        io::BufReader::with_capacity(64 * 1024, file),
        |event| events.push(event),
        |issue| issues.push(issue),
    );
    Ok((events, issues))
}

/// Stream a transcript with the folding readers' rules: each event (ours or a mapped legacy line)
/// in file order to `event`, each skipped line to `issue` — including an event whose id equals one
/// of the last [`RECENT_IDS`](crate::engine::replay::RECENT_IDS) read, the duplicate rule
/// `engine::Replay` applies, so a duplicated line is never counted twice by a reader that does
/// not fold.
pub fn each_event(input: impl BufRead, event: impl FnMut(Event), issue: impl FnMut(LineIssue)) {
    each_event_after(
        input,
        crate::engine::replay::RecentIds::default(),
        event,
        issue,
    );
}

/// [`each_event`] over the rest of a transcript whose start was read already, with the duplicate
/// rule's memory `ids` of that start (a reader resumed from a snapshot). Issues' line numbers and
/// offsets count from `input`'s start. Returns the memory at the end.
pub fn each_event_after(
    input: impl BufRead,
    mut ids: crate::engine::replay::RecentIds,
    mut event: impl FnMut(Event),
    mut issue: impl FnMut(LineIssue),
) -> crate::engine::replay::RecentIds {
    let mut reader = Reader::tolerant(input);
    loop {
        let start = reader.offset();
        let Some(item) = reader.next() else { break };
        let skipped = |message| LineIssue {
            line: reader.lines_read(),
            byte_offset: start,
            message,
        };
        match item {
            Ok(Parsed::Event(read) | Parsed::Mapped(read, _)) => {
                if ids.admit(&read.id) {
                    event(read);
                } else {
                    issue(skipped(crate::engine::replay::duplicate(&read.id)));
                }
            }
            Ok(Parsed::Blank) => {}
            Ok(Parsed::Skip(message)) => issue(skipped(message)),
            Err(line_issue) => issue(line_issue),
        }
    }
    ids
}
