//! Following a growing transcript.
//!
//! [`Tail::poll`] reads whatever was appended since the last call: complete lines are decoded,
//! a partial last line is kept until its newline arrives (never dropped), and
//! a file shorter than the current offset means it was truncated or replaced: the tail restarts
//! from the beginning and says so. A partial line that is no longer in the file (the writer cut a
//! failed append back to the last whole line) is forgotten, and what replaced it is read afresh. Polling keeps this deterministic to test; [`Tail::wait`] adds
//! the sleep loop for live use.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::reader::{LineDecoder, LineIssue, MAX_LINE_BYTES, Typed, decode_line, too_long};

/// Most bytes one poll reads, so catching up with a long transcript (Studio opening a session,
/// a coordinator resuming one) never holds more than this of the file at once; [`Batch::more`]
/// says there is more to read.
pub const POLL_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Default pause between polls in [`Tail::wait`].
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(50);

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
    /// Offset of the first byte not yet consumed (the start of `partial`).
    offset: u64,
    /// Line number of the last complete line consumed.
    line: u64,
    /// Bytes of a line whose newline has not arrived yet.
    partial: Vec<u8>,
    /// The partial line exceeded the limit: drop bytes until its newline.
    skipping: bool,
    /// Where the line being skipped started, and its line number is `line + 1`.
    skip_start: u64,
    poll_interval: Duration,
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
            offset,
            line: lines_before,
            partial: Vec::new(),
            skipping: false,
            skip_start: 0,
            poll_interval: DEFAULT_POLL_INTERVAL,
            decoder: std::marker::PhantomData,
        }
    }

    /// Set the pause between polls used by [`Tail::wait`].
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Offset of the next byte to read that is not part of a kept partial line.
    pub fn offset(&self) -> u64 {
        self.offset
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
                if self.offset > 0 || !self.partial.is_empty() {
                    self.restart();
                    batch.truncated = true;
                }
                return Ok(batch);
            }
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len < self.offset {
            self.restart();
            batch.truncated = true;
        } else if !self.partial.is_empty()
            && !still_there(&mut file, self.offset, &self.partial, len)?
        {
            self.partial.clear();
        }
        let read_from = self.offset + self.partial.len() as u64;
        if len == read_from {
            return Ok(batch);
        }
        file.seek(SeekFrom::Start(read_from))?;
        let want = (len - read_from).min(POLL_MAX_BYTES);
        batch.more = want < len - read_from;
        let mut fresh = Vec::new();
        file.take(want).read_to_end(&mut fresh)?;
        self.consume(&fresh, &mut batch.items, &mut batch.lines);
        Ok(batch)
    }

    /// Block until a poll finds something, sleeping the poll interval between polls.
    pub fn wait(&mut self) -> io::Result<Batch<D::Item>> {
        loop {
            let batch = self.poll()?;
            if !batch.is_empty() {
                return Ok(batch);
            }
            std::thread::sleep(self.poll_interval);
        }
    }

    fn restart(&mut self) {
        self.offset = 0;
        self.line = 0;
        self.partial.clear();
        self.skipping = false;
    }

    fn consume(
        &mut self,
        mut fresh: &[u8],
        items: &mut Vec<Result<D::Item, LineIssue>>,
        lines: &mut Vec<u64>,
    ) {
        while let Some(newline) = fresh.iter().position(|&b| b == b'\n') {
            let (head, rest) = fresh.split_at(newline + 1);
            fresh = rest;
            let start = self.offset;
            let length = self.partial.len() + head.len();
            self.line += 1;
            self.offset += length as u64;
            if self.skipping {
                self.skipping = false;
                self.partial.clear();
                lines.push(self.line);
                items.push(Err(LineIssue {
                    line: self.line,
                    byte_offset: self.skip_start,
                    message: too_long(self.offset - self.skip_start),
                }));
                continue;
            }
            let decoded = if self.partial.is_empty() {
                decode_line::<D>(head, self.line, start)
            } else {
                self.partial.extend_from_slice(head);
                let line = std::mem::take(&mut self.partial);
                decode_line::<D>(&line, self.line, start)
            };
            if let Some(item) = decoded {
                lines.push(self.line);
                items.push(item);
            }
        }
        if self.skipping {
            self.offset += fresh.len() as u64;
            self.partial.clear();
        } else if self.partial.len() + fresh.len() > MAX_LINE_BYTES {
            self.skipping = true;
            self.skip_start = self.offset;
            self.offset += (self.partial.len() + fresh.len()) as u64;
            self.partial.clear();
        } else {
            self.partial.extend_from_slice(fresh);
        }
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
