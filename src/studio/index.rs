//! A per-session index of transcript line offsets, built once and extended incrementally.
//!
//! Paging through a 100,000-event session must not re-read the file: each complete line is
//! recorded with its byte offset, length, id, kind and sender (kinds and senders interned), so a
//! page is a few positioned reads and a kind/role filter never touches the disk. Lines are cut by
//! the one line framer ([`crate::transcript::framer`]). A line without its newline yet is left for
//! the next extension; a line that is not an event (torn, garbage, over the framer's limit) is
//! counted and skipped; a file shorter than what was indexed means it was replaced, and the index
//! starts over.
//!
//! A long transcript's entries (past `state_snapshot`'s thresholds: 10,000 lines or 4 MiB) live
//! on disk in `studio.index` ([`super::index_file`]), which the next Studio takes up instead of
//! reading the transcript again; only the newest [`FLUSH_LINES`] entries are held in memory, and
//! pages, filters and lookups read the entries they need with positioned reads.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub(crate) use super::index_file::IndexedLine;
use super::index_file::{self, Covered, IndexFile};
use super::large_line::{LARGE_LINE_BYTES, LargeLine};
use crate::runtime::state_snapshot;
use crate::transcript::framer::{Frame, LineFramer};

/// What one extension found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Extension {
    /// The file shrank or vanished: the index restarted from byte 0 first.
    pub truncated: bool,
    /// Sequence numbers of the lines added (`first..end`).
    pub added: std::ops::Range<usize>,
}

/// The envelope fields the index keeps; everything else is skipped by serde.
#[derive(Deserialize)]
struct Header<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    from: std::borrow::Cow<'a, str>,
}

/// Lines held in memory before they are added to `studio.index` (a long session's index lives
/// on disk; only this many of its newest entries are in memory).
const FLUSH_LINES: usize = 8 * 1024;
/// Entries read from `studio.index` at once while scanning.
const SCAN_CHUNK: usize = 4 * 1024;

/// The index of one transcript file.
#[derive(Debug)]
pub struct LineIndex {
    path: PathBuf,
    /// The first entries, on disk (`studio.index`), when the transcript is long.
    stored: Option<IndexFile>,
    /// The entries after the stored ones.
    lines: Vec<IndexedLine>,
    /// Cuts the file into lines; everything before its offset is indexed or skipped.
    framer: LineFramer,
    /// Lines that were not events.
    pub skipped: u64,
    /// Ids increased strictly in file order so far (lookups may binary-search).
    sorted: bool,
    names: Vec<Box<str>>,
    name_ids: HashMap<Box<str>, u16>,
    /// A summary's parts for each line over [`LARGE_LINE_BYTES`], by sequence number.
    large: HashMap<usize, LargeLine>,
    /// A transcript this long (lines, bytes) keeps its index on disk.
    persist_from: (u64, u64),
    /// Entries held in memory before they go to disk.
    flush_lines: usize,
    /// The first extension looked for `studio.index` already.
    loaded: bool,
}

impl LineIndex {
    /// An empty index of the file at `path` (nothing is read until [`LineIndex::extend`]).
    pub fn new(path: impl AsRef<Path>) -> Self {
        LineIndex {
            path: path.as_ref().to_path_buf(),
            stored: None,
            lines: Vec::new(),
            framer: LineFramer::default(),
            skipped: 0,
            sorted: true,
            names: Vec::new(),
            name_ids: HashMap::new(),
            large: HashMap::new(),
            persist_from: (state_snapshot::MIN_LINES, state_snapshot::MIN_BYTES),
            flush_lines: FLUSH_LINES,
            loaded: false,
        }
    }

    /// The same index keeping itself on disk from `lines` lines or `bytes` bytes, `flush` entries
    /// at a time (tests cut these small).
    #[cfg(test)]
    pub(crate) fn persisting(mut self, lines: u64, bytes: u64, flush: usize) -> Self {
        self.persist_from = (lines, bytes);
        self.flush_lines = flush.max(1);
        self
    }

    /// Every indexed line, in file order (tests).
    #[cfg(test)]
    pub(crate) fn lines(&self) -> Vec<IndexedLine> {
        self.range(0..self.len()).expect("the index reads")
    }

    fn stored_count(&self) -> usize {
        self.stored.as_ref().map_or(0, |s| s.count)
    }

    /// Number of indexed events.
    pub(crate) fn len(&self) -> usize {
        self.stored_count() + self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The indexed line with sequence number `seq`.
    pub(crate) fn get(&self, seq: usize) -> Option<IndexedLine> {
        let stored = self.stored_count();
        if seq < stored {
            return self.stored.as_ref()?.read(seq..seq + 1).ok()?.pop();
        }
        self.lines.get(seq - stored).copied()
    }

    /// The indexed lines `range` (clipped to what is indexed), in file order. A stored part that
    /// cannot be read (the index file vanished) is an error.
    pub(crate) fn range(&self, range: std::ops::Range<usize>) -> io::Result<Vec<IndexedLine>> {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        let stored = self.stored_count();
        let mut out = Vec::with_capacity(end - start);
        if start < stored
            && let Some(file) = &self.stored
        {
            out.extend(file.read(start..end.min(stored))?);
        }
        let from = start.max(stored) - stored;
        let to = end.max(stored) - stored;
        out.extend_from_slice(&self.lines[from..to]);
        Ok(out)
    }

    /// The lines from `start` on (ascending) or before `end` (descending), with their sequence
    /// numbers, read a chunk at a time. A chunk that cannot be read ends the scan.
    pub(crate) fn scan(
        &self,
        from: usize,
        ascending: bool,
    ) -> impl Iterator<Item = (usize, IndexedLine)> + '_ {
        let len = self.len();
        // Ascending: the next chunk starts at `at`; descending: the next chunk ends at `at`.
        let mut at = from.min(len);
        let mut chunk: std::vec::IntoIter<(usize, IndexedLine)> = Vec::new().into_iter();
        std::iter::from_fn(move || {
            loop {
                if let Some(item) = chunk.next() {
                    return Some(item);
                }
                let range = if ascending {
                    if at >= len {
                        return None;
                    }
                    at..(at + SCAN_CHUNK).min(len)
                } else {
                    if at == 0 {
                        return None;
                    }
                    at.saturating_sub(SCAN_CHUNK)..at
                };
                let lines = self.range(range.clone()).ok()?;
                let mut numbered: Vec<(usize, IndexedLine)> = range.clone().zip(lines).collect();
                if ascending {
                    at = range.end;
                } else {
                    numbered.reverse();
                    at = range.start;
                }
                chunk = numbered.into_iter();
            }
        })
    }

    /// The interned name `id` (a kind or a sender).
    pub(crate) fn name(&self, id: u16) -> &str {
        self.names.get(usize::from(id)).map_or("", |name| name)
    }

    /// What the stream or a page sends in place of line `seq`: its summary when the line is over
    /// [`LARGE_LINE_BYTES`] (with a link into session `session`), else `None` (send the line).
    pub(crate) fn summary(&self, seq: usize, line: &IndexedLine, session: &str) -> Option<String> {
        let large = self.large.get(&seq)?;
        Some(large.summary(
            line.id(),
            line.len,
            self.name(line.kind),
            self.name(line.from),
            session,
        ))
    }

    /// The interned id of `name`, if any line uses it.
    pub(crate) fn name_id(&self, name: &str) -> Option<u16> {
        self.name_ids.get(name).copied()
    }

    /// Bytes consumed so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.framer.offset()
    }

    /// The sequence number of the first event after the one with `id`: exactly what a client
    /// that last saw `id` missed. An unknown id that sorts after every indexed id means "nothing
    /// missed"; otherwise `None`.
    pub(crate) fn position_after(&self, id: &str) -> Option<usize> {
        if let Some(seq) = self.position(id) {
            return Some(seq + 1);
        }
        if self.sorted && id.len() == 26 {
            let key = id.as_bytes();
            return Some(self.partition_point(|line| line.id.as_slice() <= key));
        }
        None
    }

    /// The first sequence number whose line fails `below` (lines are ordered by it).
    fn partition_point(&self, below: impl Fn(&IndexedLine) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.get(mid) {
                Some(line) if below(&line) => low = mid + 1,
                Some(_) => high = mid,
                None => return low,
            }
        }
        low
    }

    /// The sequence number of the event with `id`.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        let key = id.as_bytes();
        if key.len() != 26 {
            return None;
        }
        if self.sorted {
            let at = self.partition_point(|line| line.id.as_slice() < key);
            self.get(at)
                .filter(|line| line.id.as_slice() == key)
                .map(|_| at)
        } else {
            self.scan(0, true)
                .find(|(_, line)| line.id.as_slice() == key)
                .map(|(seq, _)| seq)
        }
    }

    /// Take up the index kept on disk, if it is sound and still the transcript's.
    fn load(&mut self) {
        let Some((file, covered)) = IndexFile::open(&self.path) else {
            return;
        };
        self.framer = LineFramer::resume(covered.prefix.offset, covered.prefix.lines);
        self.skipped = covered.skipped;
        self.sorted = covered.sorted;
        self.name_ids = covered
            .names
            .iter()
            .enumerate()
            .filter_map(|(i, name)| Some((name.clone(), u16::try_from(i).ok()?)))
            .collect();
        self.names = covered.names;
        self.stored = Some(file);
        // The few lines too long to send whole get their summary parts back.
        let large: Vec<(usize, IndexedLine)> = self
            .scan(0, true)
            .filter(|(_, line)| line.len > LARGE_LINE_BYTES)
            .collect();
        for (seq, line) in large {
            if let Ok(Some(Some(text))) = read_lines(&self.path, &[line]).map(|mut t| t.pop()) {
                self.large.insert(seq, LargeLine::of(text.as_bytes()));
            }
        }
    }

    /// Move the entries held in memory to disk when the transcript is long enough, `force`d or
    /// once [`FLUSH_LINES`] have gathered. A failure keeps them in memory (the index is a cache).
    fn flush(&mut self, force: bool) {
        if self.lines.is_empty() || (!force && self.lines.len() < self.flush_lines) {
            return;
        }
        let (min_lines, min_bytes) = self.persist_from;
        let offset = self.framer.offset();
        if self.framer.lines() < min_lines && offset < min_bytes {
            return;
        }
        let written = self.covered().and_then(|covered| {
            if let Some(file) = self.stored.as_mut() {
                file.append(&self.lines, &covered)
            } else {
                let file = IndexFile::create(&self.path, &self.lines, &covered)?;
                self.stored = Some(file);
                Ok(())
            }
        });
        match written {
            Ok(()) => self.lines.clear(),
            Err(err) => state_snapshot::debug(&format!(
                "{} not written: {err}",
                index_file::path_for(&self.path).display()
            )),
        }
    }

    /// What the index covers now, when it ends at a line end.
    fn covered(&self) -> io::Result<Covered> {
        let offset = self.framer.offset();
        let file = File::open(&self.path)?;
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, offset.saturating_sub(1))?;
        if offset == 0 || last[0] != b'\n' {
            return Err(io::Error::other("not at a line end"));
        }
        Ok(Covered {
            prefix: state_snapshot::prefix_of(&file, offset, self.framer.lines())?,
            skipped: self.skipped,
            sorted: self.sorted,
            names: self.names.clone(),
        })
    }

    /// Index whatever complete lines were appended since the last call.
    pub(crate) fn extend(&mut self) -> io::Result<Extension> {
        if !self.loaded {
            self.loaded = true;
            self.load();
        }
        let start = self.len();
        let mut extension = Extension {
            truncated: false,
            added: start..start,
        };
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if self.consumed() > 0 || !self.is_empty() {
                    self.reset();
                    extension.truncated = true;
                    extension.added = 0..0;
                }
                return Ok(extension);
            }
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len < self.consumed() {
            self.reset();
            extension.truncated = true;
        }
        if len == self.consumed() {
            extension.added = self.len()..self.len();
            if extension.truncated {
                extension.added = 0..0;
            }
            return Ok(extension);
        }
        // A line without its newline is read again: the writer may have cut it back since.
        self.framer.forget_pending();
        file.seek(SeekFrom::Start(self.consumed()))?;
        let mut reader = file.take(len - self.consumed());
        while let Some(frames) = self.framer.read(&mut reader)? {
            for frame in frames.iter() {
                match frame {
                    Frame::Line { offset, bytes, .. } => self.record(bytes, offset),
                    Frame::TooLong { .. } => self.skipped += 1,
                }
            }
            self.flush(false);
        }
        // A long read goes to disk whole; a few appended lines wait for more.
        let added = if extension.truncated {
            self.len()
        } else {
            self.len().saturating_sub(start)
        };
        self.flush(added >= self.flush_lines.min(1024));
        extension.added = if extension.truncated {
            0..self.len()
        } else {
            start..self.len()
        };
        Ok(extension)
    }

    fn reset(&mut self) {
        if let Some(stored) = self.stored.take() {
            stored.remove();
        }
        self.lines.clear();
        self.framer = LineFramer::default();
        self.skipped = 0;
        self.sorted = true;
        self.large.clear();
    }

    fn intern(&mut self, name: &str) -> u16 {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let Ok(id) = u16::try_from(self.names.len()) else {
            return u16::MAX;
        };
        self.names.push(name.into());
        self.name_ids.insert(name.into(), id);
        id
    }

    /// Record one complete line (without its newline) found at `offset`.
    fn record(&mut self, raw: &[u8], offset: u64) {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let mut start = 0usize;
        if offset == 0 && line.starts_with(b"\xEF\xBB\xBF") {
            start = 3;
        }
        let body = &line[start..];
        if body.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(header) = serde_json::from_slice::<Header<'_>>(body) else {
            self.skipped += 1;
            return;
        };
        // Ids become SSE `id:` fields and lookup keys: only real ULIDs qualify.
        if !crate::transcript::validate::is_ulid(&header.id) {
            self.skipped += 1;
            return;
        }
        let Ok(id) = <[u8; 26]>::try_from(header.id.as_bytes()) else {
            self.skipped += 1;
            return;
        };
        let Ok(len) = u32::try_from(body.len()) else {
            self.skipped += 1;
            return;
        };
        if let Some(last) = self.last_id()
            && last >= id
        {
            self.sorted = false;
        }
        let kind = self.intern(&header.kind);
        let from = self.intern(&header.from);
        if len > LARGE_LINE_BYTES {
            self.large.insert(self.len(), LargeLine::of(body));
        }
        self.lines.push(IndexedLine {
            offset: offset + start as u64,
            len,
            kind,
            from,
            id,
        });
    }

    /// The id of the last indexed line.
    fn last_id(&self) -> Option<[u8; 26]> {
        match self.lines.last() {
            Some(line) => Some(line.id),
            None => self
                .len()
                .checked_sub(1)
                .and_then(|seq| self.get(seq))
                .map(|l| l.id),
        }
    }
}

/// Most bytes one read call (and one batch of lines) holds in memory: lines can be up to
/// [`crate::transcript::framer::MAX_LINE_BYTES`] long, so batches are bounded by bytes as well as by count.
pub(crate) const BATCH_BYTES: u64 = 8 * 1024 * 1024;

/// The end of a batch starting at `start`: at most `max_lines` lines and, past the first line,
/// at most [`BATCH_BYTES`] bytes.
pub(crate) fn batch_end(lines: &[IndexedLine], start: usize, max_lines: usize) -> usize {
    let mut bytes = 0u64;
    let mut end = start;
    while end < lines.len() && end - start < max_lines {
        bytes += u64::from(lines[end].len);
        if end > start && bytes > BATCH_BYTES {
            break;
        }
        end += 1;
    }
    end
}

/// Read the text of indexed lines from `path`, in the order given. Lines that can no longer be
/// read (the file was replaced under us) come back as `None`.
pub(crate) fn read_lines(path: &Path, lines: &[IndexedLine]) -> io::Result<Vec<Option<String>>> {
    let mut file = File::open(path)?;
    let mut out = Vec::with_capacity(lines.len());
    // Contiguous runs are read with one call.
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len()
            && lines[j].offset > lines[j - 1].offset
            && lines[j].offset - lines[j - 1].offset <= u64::from(lines[j - 1].len) + 2
            && lines[j].offset + u64::from(lines[j].len) - lines[i].offset <= BATCH_BYTES
        {
            j += 1;
        }
        let first = lines[i];
        let last = lines[j - 1];
        let span = usize::try_from(last.offset + u64::from(last.len) - first.offset).unwrap_or(0);
        let mut buf = vec![0u8; span];
        file.seek(SeekFrom::Start(first.offset))?;
        let filled = read_fully(&mut file, &mut buf)?;
        for line in &lines[i..j] {
            let from = usize::try_from(line.offset - first.offset).unwrap_or(usize::MAX);
            let to = from.saturating_add(line.len as usize);
            out.push(
                buf.get(from..to.min(filled))
                    .filter(|bytes| bytes.len() == line.len as usize)
                    .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok()),
            );
        }
        i = j;
    }
    Ok(out)
}

fn read_fully(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
