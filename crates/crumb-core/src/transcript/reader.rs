//! Streaming transcript reader: one line at a time, never the whole file.
//!
//! Lines come from the one line framer ([`super::framer`]). A torn or invalid line is skipped and
//! reported as a [`LineIssue`] with its line number and byte offset; it never aborts the read (a
//! reader that died on the first bad line would make replay and resume impossible). Tolerates a
//! missing final newline, CRLF, a UTF-8 BOM and blank lines.
//!
//! Everything that folds a session into state (replay, status, resume's coordinator, Studio) reads
//! lines with [`Tolerant`] — the classification of [`crate::transcript::parse::parse_line`] — then
//! folds them through `engine::Replay`; the readers that do not fold ([`each_event`]) apply the
//! same duplicate-id rule ([`super::recent_ids`]). [`Typed`] is the stricter view for tools that
//! want only well-formed events of our own (the mock agent, the dispatcher's look-backs). This
//! module takes a reader and opens no file (the `crumb` crate's `transcript::reader` does).

use std::io::Read;

use serde::de::DeserializeOwned;

use super::event::Event;
use super::framer::{Frame, FramedInput, Frames, too_long};
use super::parse::{Parsed, parse_line};
use super::recent_ids::{RecentIds, duplicate};
use super::validate::check_event;

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
fn clean_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Whether a line holds nothing but whitespace.
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Decode one line the framer cut ([`super::framer`]): `None` for a blank line, an issue for a line
/// over the limit or one `D` refuses. The one way from a framed line to an item, shared by this
/// reader and the live tail.
pub fn decode_frame<D: LineDecoder>(frame: Frame<'_>) -> Option<Result<D::Item, LineIssue>> {
    match frame {
        Frame::TooLong { line, offset, len } => Some(Err(LineIssue {
            line,
            byte_offset: offset,
            message: too_long(len),
        })),
        Frame::Line {
            line,
            offset,
            bytes,
        } => decode_line::<D>(bytes, line, offset),
    }
}

/// Decode one complete line; `None` for a blank line.
fn decode_line<D: LineDecoder>(
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
    input: FramedInput<R>,
    /// The batch being read, and the index of its next line.
    frames: Frames,
    next: usize,
    /// Lines and bytes of the lines handed out so far.
    line: u64,
    offset: u64,
    done: bool,
    decoder: std::marker::PhantomData<D>,
}

impl<R: Read> Reader<R, Typed> {
    /// A reader yielding typed events.
    pub fn new(input: R) -> Self {
        Reader::with_decoder(input)
    }
}

impl<R: Read> Reader<R, Raw> {
    /// A reader yielding raw JSON values.
    pub fn raw(input: R) -> Self {
        Reader::with_decoder(input)
    }
}

impl<R: Read> Reader<R, Tolerant> {
    /// A reader classifying lines as every folding reader does ([`Tolerant`]).
    pub fn tolerant(input: R) -> Self {
        Reader::with_decoder(input)
    }
}

impl<R: Read, D: LineDecoder> Reader<R, D> {
    /// A reader decoding lines with `D` (a caller that needs only a few lines can skip the rest
    /// without parsing them).
    pub fn with_decoder(input: R) -> Self {
        Reader {
            input: FramedInput::new(input),
            frames: Frames::default(),
            next: 0,
            line: 0,
            offset: 0,
            done: false,
            decoder: std::marker::PhantomData,
        }
    }

    /// Bytes of the lines read so far (where a tail should continue).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Lines read so far.
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    /// The next line of the input, or `None` at its end (or after a read error, reported once).
    fn next_frame(&mut self) -> Option<Result<Frame<'_>, LineIssue>> {
        if self.next == self.frames.ranges.len() {
            match self.input.next_frames() {
                Ok(Some(frames)) => (self.frames, self.next) = (frames, 0),
                Ok(None) => return None,
                Err(e) => {
                    self.done = true;
                    return Some(Err(LineIssue {
                        line: self.line + 1,
                        byte_offset: self.offset,
                        message: format!("read error: {e}"),
                    }));
                }
            }
        }
        let index = self.next;
        self.next += 1;
        self.line = self.frames.first_line + index as u64;
        self.offset = match self.frames.frame(self.next) {
            Some(following) => following.offset(),
            None => self.input.offset(),
        };
        self.frames.frame(index).map(Ok)
    }
}

/// A decoded line with its line number and byte offset.
type Located<T> = (u64, u64, T);

impl<R: Read, D: LineDecoder> Reader<R, D> {
    /// The next non-blank line, decoded, with its line number and byte offset.
    fn next_located(&mut self) -> Option<Result<Located<D::Item>, LineIssue>> {
        while !self.done {
            let item = match self.next_frame()? {
                Err(issue) => Some(Err(issue)),
                Ok(frame) => {
                    let (line, offset) = (frame.line(), frame.offset());
                    decode_frame::<D>(frame).map(|decoded| decoded.map(|item| (line, offset, item)))
                }
            };
            if item.is_some() {
                return item;
            }
        }
        None
    }
}

impl<R: Read, D: LineDecoder> Iterator for Reader<R, D> {
    type Item = Result<D::Item, LineIssue>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_located()
            .map(|located| located.map(|(_, _, item)| item))
    }
}

/// Stream a transcript with the folding readers' rules: each event (ours or a mapped legacy line)
/// in file order to `event`, each skipped line to `issue` — including an event whose id equals one
/// of the last [`RECENT_IDS`](super::recent_ids::RECENT_IDS) read, the duplicate rule
/// `engine::Replay` applies, so a duplicated line is never counted twice by a reader that does
/// not fold.
pub fn each_event(input: impl Read, event: impl FnMut(Event), issue: impl FnMut(LineIssue)) {
    each_event_after(input, RecentIds::default(), event, issue);
}

/// [`each_event`] over the rest of a transcript whose start was read already, with the duplicate
/// rule's memory `ids` of that start (a reader resumed from a snapshot). Issues' line numbers and
/// offsets count from `input`'s start. Returns the memory at the end.
pub fn each_event_after(
    input: impl Read,
    mut ids: RecentIds,
    mut event: impl FnMut(Event),
    mut issue: impl FnMut(LineIssue),
) -> RecentIds {
    let mut reader = Reader::tolerant(input);
    while let Some(item) = reader.next_located() {
        let (line, byte_offset, parsed) = match item {
            Ok(read) => read,
            Err(line_issue) => {
                issue(line_issue);
                continue;
            }
        };
        let skipped = |message| LineIssue {
            line,
            byte_offset,
            message,
        };
        match parsed {
            Parsed::Event(read) | Parsed::Mapped(read, _) => {
                if ids.admit(&read.id) {
                    event(read);
                } else {
                    issue(skipped(duplicate(&read.id)));
                }
            }
            Parsed::Blank => {}
            Parsed::Skip(message) => issue(skipped(message)),
        }
    }
    ids
}
