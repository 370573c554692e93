//! Following a growing transcript.
//!
//! [`Tail::poll`] reads whatever was appended since the last call: complete lines are decoded,
//! a partial last line is kept until its newline arrives (never dropped), and
//! a file shorter than the current offset means it was truncated or replaced: the tail restarts
//! from the beginning and says so. A partial line that is no longer in the file (the writer cut a
//! failed append back to the last whole line) is forgotten, and what replaced it is read afresh.
//! Polling keeps this deterministic to test; callers decide when to poll again.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::framer::LineFramer;
use super::reader::{LineDecoder, LineIssue, Typed, decode_frame};

/// Most bytes one poll reads, so catching up with a long transcript (Studio opening a session,
/// a coordinator resuming one) never holds more than this of the file at once; [`Batch::more`]
/// says there is more to read.
pub(crate) const POLL_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// What one poll found.
#[derive(Debug)]
pub struct Batch<T> {
    /// Decoded lines (or issues) in file order.
    pub items: Vec<Result<T, LineIssue>>,
    /// The 1-based line number of each item (blank lines yield no item), so a fold reports a
    /// skipped line by the same number `crumb replay` gives it.
    pub lines: Vec<u64>,
    /// The file was shorter than the offset: the tail restarted at byte 0 before reading `items`.
    pub truncated: bool,
    /// The file holds more than this poll read (see [`POLL_MAX_BYTES`]): poll again.
    pub more: bool,
}

impl<T> Batch<T> {
    /// Nothing new.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && !self.truncated && !self.more
    }
}

/// Follows appends to one file.
pub struct Tail<D: LineDecoder = Typed> {
    path: PathBuf,
    /// Cuts what each poll reads into lines, keeping a line whose newline has not arrived yet
    /// (or dropping one over the limit) across polls.
    framer: LineFramer,
    decoder: std::marker::PhantomData<D>,
}

impl Tail<Typed> {
    /// Follow `path` from its start, yielding typed events.
    pub fn new(path: impl AsRef<Path>) -> Self {
        Tail::resume(path, 0, 0)
    }
}

impl<D: LineDecoder> Tail<D> {
    /// Follow `path` from `offset` (the start of a line), where `lines_before` lines precede it,
    /// e.g. after a [`super::reader::Reader`] replayed the file up to there.
    pub fn resume(path: impl AsRef<Path>, offset: u64, lines_before: u64) -> Self {
        Tail {
            path: path.as_ref().to_path_buf(),
            framer: LineFramer::resume(offset, lines_before),
            decoder: std::marker::PhantomData,
        }
    }

    /// Offset of the next byte to read that is not part of a kept partial line.
    pub fn offset(&self) -> u64 {
        self.framer.offset()
    }

    /// Lines before [`Tail::offset`] (a kept partial line not counted).
    pub fn lines(&self) -> u64 {
        self.framer.lines()
    }

    /// Read what was appended since the last poll. A missing file counts as empty.
    pub fn poll(&mut self) -> io::Result<Batch<D::Item>> {
        let mut batch = Batch {
            items: Vec::new(),
            lines: Vec::new(),
            truncated: false,
            more: false,
        };
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if self.framer.consumed() > 0 {
                    self.restart();
                    batch.truncated = true;
                }
                return Ok(batch);
            }
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len < self.framer.offset() {
            self.restart();
            batch.truncated = true;
        } else if !self.framer.pending().is_empty()
            && !still_there(&mut file, self.framer.offset(), self.framer.pending(), len)?
        {
            self.framer.forget_pending();
        }
        let read_from = self.framer.consumed();
        if len == read_from {
            return Ok(batch);
        }
        file.seek(SeekFrom::Start(read_from))?;
        let want = (len - read_from).min(POLL_MAX_BYTES);
        batch.more = want < len - read_from;
        let mut fresh = file.take(want);
        while let Some(frames) = self.framer.read(&mut fresh)? {
            for frame in frames.iter() {
                if let Some(item) = decode_frame::<D>(frame) {
                    batch.lines.push(frame.line());
                    batch.items.push(item);
                }
            }
        }
        Ok(batch)
    }

    fn restart(&mut self) {
        self.framer = LineFramer::resume(0, 0);
    }
}

/// Whether the partial line `partial`, read at `offset`, is still what the file holds there. Its
/// head is compared (the first 4 KiB): a line written in its place starts with another id.
fn still_there(file: &mut File, offset: u64, partial: &[u8], len: u64) -> io::Result<bool> {
    if len < offset + partial.len() as u64 {
        return Ok(false);
    }
    let head = &partial[..partial.len().min(4096)];
    let mut now = Vec::with_capacity(head.len());
    file.seek(SeekFrom::Start(offset))?;
    file.take(head.len() as u64).read_to_end(&mut now)?;
    Ok(now == head)
}

#[cfg(test)]
mod tests {
    use super::{POLL_MAX_BYTES, Tail};
    use crate::transcript::reader::Tolerant;

    /// A poll reads at most `POLL_MAX_BYTES`, says there is more, and the next polls go on from
    /// there with the right line numbers.
    #[test]
    fn catching_up_a_long_file_takes_bounded_polls_and_keeps_line_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        let filler = format!("{}\n", " ".repeat(1023));
        let blank_lines = usize::try_from(POLL_MAX_BYTES / 1024 + 3).expect("small");
        let mut text = filler.repeat(blank_lines);
        text.push_str("garbage\n");
        std::fs::write(&path, &text).expect("write");
        let mut tail: Tail<Tolerant> = Tail::resume(&path, 0, 0);
        let first = tail.poll().expect("poll");
        assert!(first.more && first.items.is_empty());
        let mut lines = Vec::new();
        loop {
            let batch = tail.poll().expect("poll");
            lines.extend(batch.lines);
            if !batch.more {
                break;
            }
        }
        assert_eq!(lines, vec![blank_lines as u64 + 1]);
    }
}
