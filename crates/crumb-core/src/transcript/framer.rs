//! The one line framer: how every transcript reader turns bytes into lines.
//!
//! Replay's chunked reader, the streaming [`super::reader::Reader`], the live tail and Studio's
//! index all cut their bytes here, so they agree on the rules: a line ends at `\n` (a `\r` before
//! it, a byte-order mark, blank lines and invalid UTF-8 are the decoders' business, and stay in the
//! line); lines are numbered from 1 and carry their byte offset (where a tail resumes, where an
//! index seeks); a line longer than [`MAX_LINE_BYTES`] is reported as [`Frame::TooLong`] without
//! being buffered; and a last line without its newline is a line only when the caller says the
//! input has ended ([`LineFramer::finish`]) — a tail keeps it until its newline arrives.
//!
//! The framer takes bytes from any [`Read`] and never opens a file. Lines come in batches
//! ([`Frames`]) that own their bytes, so a batch can be handed to another thread whole (replay
//! reads batches in parallel) and hardly anything is allocated per line.

use std::io::{self, Read};

/// Longest transcript line any reader parses (64 MiB), not counting its newline. Longer lines are
/// skipped (and reported) without being buffered, so a hostile file cannot make a reader allocate
/// without bound.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Bytes read (and framed as one batch) at a time.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// Why a line over [`MAX_LINE_BYTES`] was skipped, worded the same by every reader.
pub fn too_long(len: u64) -> String {
    format!("line is {len} bytes, longer than the {MAX_LINE_BYTES}-byte limit; skipped")
}

/// One line of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A line's bytes, without its `\n`.
    Line {
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line's first byte.
        offset: u64,
        bytes: &'a [u8],
    },
    /// A line over [`MAX_LINE_BYTES`]; its bytes were dropped.
    TooLong {
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line's first byte.
        offset: u64,
        /// Its length, newline included.
        len: u64,
    },
}

impl Frame<'_> {
    /// The line's 1-based number.
    pub fn line(&self) -> u64 {
        match self {
            Frame::Line { line, .. } | Frame::TooLong { line, .. } => *line,
        }
    }

    /// The byte offset of the line's first byte.
    pub fn offset(&self) -> u64 {
        match self {
            Frame::Line { offset, .. } | Frame::TooLong { offset, .. } => *offset,
        }
    }
}

/// Whole lines, a batch at a time: one buffer and where each line lies in it.
#[derive(Debug, Default)]
pub struct Frames {
    /// Line number of the first line.
    pub first_line: u64,
    /// Byte offset (in the input) of `bytes[0]`.
    pub offset: u64,
    pub bytes: Vec<u8>,
    /// Start and end (exclusive, newline not included) of each line in `bytes`; `(0, 0)` for a
    /// line that was too long.
    pub ranges: Vec<(usize, usize)>,
    /// The lines over [`MAX_LINE_BYTES`]: index in `ranges`, byte offset and length (newline
    /// included). Their bytes are not in `bytes`.
    pub too_long: Vec<(usize, u64, u64)>,
}

impl Frames {
    /// The batch's lines in order.
    pub fn iter(&self) -> impl Iterator<Item = Frame<'_>> {
        (0..self.ranges.len()).filter_map(|index| self.frame(index))
    }

    /// The batch's `index`th line.
    pub fn frame(&self, index: usize) -> Option<Frame<'_>> {
        let &(start, end) = self.ranges.get(index)?;
        let line = self.first_line + index as u64;
        Some(match self.too_long.iter().find(|(at, ..)| *at == index) {
            Some(&(_, offset, len)) => Frame::TooLong { line, offset, len },
            None => Frame::Line {
                line,
                offset: self.offset + start as u64,
                bytes: &self.bytes[start..end],
            },
        })
    }

    /// Whether the batch holds no line.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// Cuts a byte stream into lines, a read at a time, without ever buffering more than
/// [`MAX_LINE_BYTES`] of one line.
///
/// Each read lands directly in the batch's own buffer (after the unfinished line carried over from
/// the previous read), so the input's bytes are copied once, by the kernel; only the short
/// unfinished tail is copied again. Newlines are found with `memchr` (vectorised).
#[derive(Debug, Clone)]
pub struct LineFramer {
    /// Bytes asked for per read ([`CHUNK_BYTES`]; smaller in tests, to cut lines everywhere).
    chunk: usize,
    /// The unfinished last line read so far.
    carry: Vec<u8>,
    /// An over-long line being dropped: its offset and the bytes dropped so far.
    dropping: Option<(u64, u64)>,
    /// Longest line kept.
    max_line: u64,
    /// Number of the next line.
    next_line: u64,
    /// Bytes taken from the input so far (the carry included), counted from its offset 0.
    consumed: u64,
}

impl Default for LineFramer {
    fn default() -> Self {
        LineFramer::resume(0, 0)
    }
}

impl LineFramer {
    /// A framer for input that starts at byte `offset` of the transcript (the start of a line),
    /// after `lines_before` lines.
    pub fn resume(offset: u64, lines_before: u64) -> Self {
        LineFramer {
            chunk: CHUNK_BYTES,
            carry: Vec::new(),
            dropping: None,
            max_line: MAX_LINE_BYTES as u64,
            next_line: lines_before + 1,
            consumed: offset,
        }
    }

    /// The same framer with another line limit, for a file whose lines are shorter than a
    /// transcript's (the inbox's commands).
    #[must_use]
    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line as u64;
        self
    }

    /// Offset of the first byte not yet framed into a line: the start of the unfinished line kept
    /// for the next read, or the end of what was read (where a tail goes on).
    pub fn offset(&self) -> u64 {
        self.consumed - self.carry.len() as u64
    }

    /// Bytes taken from the input so far, an unfinished line included (where the next read
    /// starts).
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Lines framed so far (and those before the input).
    pub fn lines(&self) -> u64 {
        self.next_line - 1
    }

    /// The unfinished last line kept for the next read.
    pub fn pending(&self) -> &[u8] {
        &self.carry
    }

    /// Drop the unfinished line (it is no longer in the file): the next read starts at
    /// [`LineFramer::offset`].
    pub fn forget_pending(&mut self) {
        self.consumed -= self.carry.len() as u64;
        self.carry.clear();
    }

    /// Read once (up to [`CHUNK_BYTES`]) from `input` and frame the lines the read completed.
    /// `Ok(None)` when `input` had nothing more; the batch may be empty (a read inside one line).
    pub fn read(&mut self, input: &mut impl Read) -> io::Result<Option<Frames>> {
        // The carried line first, then up to `chunk` new bytes after it.
        let mut bytes = std::mem::take(&mut self.carry);
        let kept = bytes.len();
        let read = match fill(input, &mut bytes, self.chunk) {
            Ok(read) => read,
            Err(e) => {
                bytes.truncate(kept);
                self.carry = bytes;
                return Err(e);
            }
        };
        if read == 0 {
            self.carry = bytes;
            return Ok(None);
        }
        self.consumed += read as u64;
        let mut frames = self.batch(self.consumed - (kept + read) as u64);
        self.split(bytes, kept, &mut frames);
        self.next_line += frames.ranges.len() as u64;
        Ok(Some(frames))
    }

    /// The input has ended: its last line, when it has no newline (a torn write, or a file whose
    /// writer omits the last newline), as a batch of one.
    pub fn finish(&mut self) -> Option<Frames> {
        let mut frames = self.batch(self.offset());
        if let Some((offset, len)) = self.dropping.take() {
            frames.too_long.push((0, offset, len));
            frames.ranges.push((0, 0));
        } else if !self.carry.is_empty() {
            frames.ranges.push((0, self.carry.len()));
            frames.bytes = std::mem::take(&mut self.carry);
        } else {
            return None;
        }
        self.next_line += 1;
        Some(frames)
    }

    fn batch(&self, offset: u64) -> Frames {
        Frames {
            first_line: self.next_line,
            offset,
            ..Frames::default()
        }
    }

    /// Turn `bytes` (`kept` carried bytes, then a fresh read) into `frames`: every line completed
    /// by the read, with the unfinished tail kept for the next read.
    fn split(&mut self, mut bytes: Vec<u8>, kept: usize, frames: &mut Frames) {
        let Some(last) = memchr::memrchr(b'\n', &bytes[kept..]).map(|at| kept + at) else {
            match &mut self.dropping {
                Some((_, len)) => *len += (bytes.len() - kept) as u64,
                None => self.carry_over(bytes, frames.offset),
            }
            return;
        };
        let mut line_start = 0;
        if let Some((offset, len)) = self.dropping.take() {
            // The over-long line ends at the first newline of this read (nothing was carried).
            let first = memchr::memchr(b'\n', &bytes).unwrap_or(last);
            frames
                .too_long
                .push((frames.ranges.len(), offset, len + first as u64 + 1));
            frames.ranges.push((0, 0));
            line_start = first + 1;
        }
        let from = line_start;
        for newline in memchr::memchr_iter(b'\n', bytes.get(from..=last).unwrap_or_default()) {
            let end = from + newline;
            if (end - line_start) as u64 > self.max_line {
                // Completed within one read, but still over the limit.
                let offset = frames.offset + line_start as u64;
                let len = (end + 1 - line_start) as u64;
                frames.too_long.push((frames.ranges.len(), offset, len));
                frames.ranges.push((0, 0));
            } else {
                frames.ranges.push((line_start, end));
            }
            line_start = end + 1;
        }
        self.carry_over(bytes[last + 1..].to_vec(), frames.offset + last as u64 + 1);
        bytes.truncate(last + 1);
        frames.bytes = bytes;
    }

    /// Keep an unfinished line (at `offset`) for the next read, or count it as dropped once it is
    /// too long.
    fn carry_over(&mut self, rest: Vec<u8>, offset: u64) {
        if rest.len() as u64 > self.max_line {
            self.dropping = Some((offset, rest.len() as u64));
        } else {
            self.carry = rest;
        }
    }
}

/// Append up to `limit` bytes of `input` to `bytes`, stopping early only at its end: the bytes
/// appended. Every read asks for all that is left of `limit`, so a file is read in as few calls as
/// the kernel allows (`Read::take(..).read_to_end` starts at 8 KiB and doubles: six reads a
/// 256 KiB chunk). On an error `bytes` may hold part of what was read.
fn fill(input: &mut impl Read, bytes: &mut Vec<u8>, limit: usize) -> io::Result<usize> {
    let start = bytes.len();
    bytes.resize(start + limit, 0);
    let mut filled = 0;
    let result = loop {
        if filled == limit {
            break Ok(());
        }
        match input.read(&mut bytes[start + filled..]) {
            Ok(0) => break Ok(()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    bytes.truncate(start + filled);
    result.map(|()| filled)
}

/// A whole input, framed: [`LineFramer::read`] until the input ends, then its last line without a
/// newline ([`LineFramer::finish`]). Only batches that hold a line are returned.
#[derive(Debug)]
pub struct FramedInput<R> {
    input: R,
    framer: LineFramer,
    ended: bool,
}

impl<R: Read> FramedInput<R> {
    /// Frame `input` from its first byte, the transcript's line 1.
    pub fn new(input: R) -> Self {
        FramedInput::resume(input, 0, 0)
    }

    /// Frame `input`, which starts at byte `offset` of the transcript after `lines_before` lines
    /// (a reader going on from a snapshot).
    pub fn resume(input: R, offset: u64, lines_before: u64) -> Self {
        FramedInput {
            input,
            framer: LineFramer::resume(offset, lines_before),
            ended: false,
        }
    }

    /// The next batch of lines, `Ok(None)` at the end of the input.
    pub fn next_frames(&mut self) -> io::Result<Option<Frames>> {
        while !self.ended {
            match self.framer.read(&mut self.input)? {
                Some(frames) if frames.is_empty() => {}
                Some(frames) => return Ok(Some(frames)),
                None => {
                    self.ended = true;
                    return Ok(self.framer.finish());
                }
            }
        }
        Ok(None)
    }

    /// Bytes framed into lines so far (where a reader of the rest would go on).
    pub fn offset(&self) -> u64 {
        self.framer.offset()
    }

    /// Lines framed so far.
    pub fn lines(&self) -> u64 {
        self.framer.lines()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Frame, FramedInput};

    /// Hands out at most `step` bytes per read, to put line ends at every chunk position.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// (line number, offset, Some(bytes) or None when dropped as too long) for every line.
    fn lines(
        data: &[u8],
        step: usize,
        chunk: usize,
        max_line: u64,
    ) -> Vec<(u64, u64, Option<Vec<u8>>)> {
        let mut input = FramedInput::new(Trickle { data, step });
        input.framer.max_line = max_line;
        input.framer.chunk = chunk;
        let mut out = Vec::new();
        while let Some(frames) = input.next_frames().expect("in-memory reads do not fail") {
            out.extend(frames.iter().map(|frame| match frame {
                Frame::Line {
                    line,
                    offset,
                    bytes,
                } => (line, offset, Some(bytes.to_vec())),
                Frame::TooLong { line, offset, .. } => (line, offset, None),
            }));
        }
        assert_eq!(input.offset(), data.len() as u64, "everything is framed");
        out
    }

    proptest! {
        #[test]
        fn framing_yields_exactly_the_lines_of_the_input_with_their_offsets(
            raw in prop::collection::vec(prop::collection::vec(prop_oneof![Just(b'a'), Just(b'\r'), any::<u8>()], 0..40), 0..20),
            step in 1usize..64,
            chunk in 1usize..64,
            final_newline: bool,
        ) {
            let raw: Vec<Vec<u8>> = raw.into_iter().map(|l| l.into_iter().filter(|&b| b != b'\n').collect()).collect();
            let mut data = raw.join(&b'\n');
            if final_newline && !raw.is_empty() {
                data.push(b'\n');
            }
            let mut expected = Vec::new();
            if !data.is_empty() {
                let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
                if data.last() == Some(&b'\n') {
                    parts.pop();
                }
                let mut offset = 0;
                for (i, part) in parts.into_iter().enumerate() {
                    expected.push((i as u64 + 1, offset, Some(part.to_vec())));
                    offset += part.len() as u64 + 1;
                }
            }
            prop_assert_eq!(lines(&data, step, chunk, u64::MAX), expected);
        }
    }

    #[test]
    fn over_long_lines_are_dropped_without_losing_their_neighbours() {
        let data = b"short\nthis line is far too long\nok\nanother very long line at the end";
        for (step, chunk) in
            (1..40).flat_map(|step| [(step, 1), (step, step), (step, 10), (step, 64)])
        {
            let got = lines(data, step, chunk, 10);
            assert_eq!(
                got,
                vec![
                    (1, 0, Some(b"short".to_vec())),
                    (2, 6, None),
                    (3, 32, Some(b"ok".to_vec())),
                    (4, 35, None)
                ],
                "step {step}, chunk {chunk}"
            );
        }
    }

    /// Counts the reads asked of it.
    struct Counted<'a> {
        data: &'a [u8],
        reads: usize,
    }

    impl std::io::Read for Counted<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.reads += 1;
            let n = buf.len().min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_chunk_is_read_in_one_call_when_the_input_has_it() {
        let line = [b'x'; 99];
        let data: Vec<u8> = (0..4 * super::CHUNK_BYTES / 100)
            .flat_map(|_| line.iter().copied().chain([b'\n']))
            .collect();
        let mut input = FramedInput::new(Counted {
            data: &data,
            reads: 0,
        });
        let mut lines = 0;
        while let Some(frames) = input.next_frames().expect("in-memory reads do not fail") {
            lines += frames.ranges.len();
        }
        assert_eq!(lines, data.len() / 100);
        // Four full chunks and the read that finds the end (the last chunk is a little short).
        assert!(
            input.input.reads <= 6,
            "{} reads for {} bytes",
            input.input.reads,
            data.len()
        );
    }

    #[test]
    fn an_unfinished_line_waits_for_its_newline_until_the_input_ends() {
        let mut framer = super::LineFramer::resume(10, 2);
        let first = framer
            .read(&mut &b"{\"a\":1}\n{\"b\""[..])
            .unwrap()
            .unwrap();
        assert_eq!(
            first
                .iter()
                .map(|f| (f.line(), f.offset()))
                .collect::<Vec<_>>(),
            [(3, 10)]
        );
        assert_eq!((framer.offset(), framer.pending()), (18, &b"{\"b\""[..]));
        let second = framer.read(&mut &b":2}\n"[..]).unwrap().unwrap();
        let got: Vec<Frame<'_>> = second.iter().collect();
        assert_eq!(
            got,
            [Frame::Line {
                line: 4,
                offset: 18,
                bytes: b"{\"b\":2}"
            }]
        );
        assert!(framer.finish().is_none());
        assert_eq!(framer.lines(), 4);
    }
}
