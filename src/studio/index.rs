//! A per-session index of transcript line offsets, built once and extended incrementally.
//!
//! Paging through a 100,000-event session must not re-read the file: each complete line is
//! recorded with its byte offset, length, id, kind and sender (kinds and senders interned), so a
//! page is a few positioned reads and a kind/role filter never touches the disk. Lines are cut by
//! the one line framer ([`crate::transcript::framer`]). A line without its newline yet is left for
//! the next extension; a line that is not an event (torn, garbage, over the framer's limit) is
//! counted and skipped; a file shorter than what was indexed means it was replaced, and the index
//! starts over.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::large_line::{LARGE_LINE_BYTES, LargeLine};
use crate::transcript::framer::{Frame, LineFramer};

/// One indexed event line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexedLine {
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length without the line terminator.
    pub len: u32,
    /// Interned kind.
    pub kind: u16,
    /// Interned sender.
    pub from: u16,
    /// The event id (a ULID: 26 ASCII bytes).
    pub id: [u8; 26],
}

impl IndexedLine {
    /// The id as text.
    pub(crate) fn id(&self) -> &str {
        std::str::from_utf8(&self.id).unwrap_or("")
    }
}

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

/// The index of one transcript file.
#[derive(Debug)]
pub struct LineIndex {
    path: PathBuf,
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
}

impl LineIndex {
    /// An empty index of the file at `path` (nothing is read until [`LineIndex::extend`]).
    pub fn new(path: impl AsRef<Path>) -> Self {
        LineIndex {
            path: path.as_ref().to_path_buf(),
            lines: Vec::new(),
            framer: LineFramer::default(),
            skipped: 0,
            sorted: true,
            names: Vec::new(),
            name_ids: HashMap::new(),
            large: HashMap::new(),
        }
    }

    /// Number of indexed events.
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The indexed line with sequence number `seq`.
    pub(crate) fn get(&self, seq: usize) -> Option<&IndexedLine> {
        self.lines.get(seq)
    }

    /// All indexed lines in file order.
    pub(crate) fn lines(&self) -> &[IndexedLine] {
        &self.lines
    }

    /// The interned name `id` (a kind or a sender).
    pub(crate) fn name(&self, id: u16) -> &str {
        self.names.get(usize::from(id)).map_or("", |name| name)
    }

    /// What the stream or a page sends in place of line `seq`: its summary when the line is over
    /// [`LARGE_LINE_BYTES`] (with a link into session `session`), else `None` (send the line).
    pub(crate) fn summary(&self, seq: usize, session: &str) -> Option<String> {
        let line = self.lines.get(seq)?;
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
            return Some(self.lines.partition_point(|line| line.id.as_slice() <= key));
        }
        None
    }

    /// The sequence number of the event with `id`.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        let key = id.as_bytes();
        if key.len() != 26 {
            return None;
        }
        if self.sorted {
            self.lines
                .binary_search_by(|line| line.id.as_slice().cmp(key))
                .ok()
        } else {
            self.lines.iter().position(|line| line.id.as_slice() == key)
        }
    }

    /// Index whatever complete lines were appended since the last call.
    pub(crate) fn extend(&mut self) -> io::Result<Extension> {
        let start = self.lines.len();
        let mut extension = Extension {
            truncated: false,
            added: start..start,
        };
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if self.consumed() > 0 || !self.lines.is_empty() {
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
            extension.added = self.lines.len()..self.lines.len();
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
        }
        extension.added = if extension.truncated {
            0..self.lines.len()
        } else {
            start..self.lines.len()
        };
        Ok(extension)
    }

    fn reset(&mut self) {
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
        if let Some(last) = self.lines.last()
            && last.id >= id
        {
            self.sorted = false;
        }
        let kind = self.intern(&header.kind);
        let from = self.intern(&header.from);
        if len > LARGE_LINE_BYTES {
            self.large.insert(self.lines.len(), LargeLine::of(body));
        }
        self.lines.push(IndexedLine {
            offset: offset + start as u64,
            len,
            kind,
            from,
            id,
        });
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
mod tests {
    use std::io::Write;

    use proptest::prelude::*;

    use super::*;

    /// A piece of a transcript: an event line, or something that is not one.
    #[derive(Debug, Clone)]
    enum Piece {
        Event { kind: u8, from: u8, crlf: bool },
        Garbage(Vec<u8>),
        Blank,
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            6 => (0u8..4, 0u8..3, any::<bool>()).prop_map(|(kind, from, crlf)| Piece::Event { kind, from, crlf }),
            1 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..40).prop_map(Piece::Garbage),
            1 => Just(Piece::Blank),
        ]
    }

    /// The file's bytes and the ids of its events, in order.
    fn render(pieces: &[Piece]) -> (Vec<u8>, Vec<String>) {
        let mut generator = ulid::Generator::new();
        let mut bytes = Vec::new();
        let mut ids = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Event { kind, from, crlf } => {
                    let id = generator.generate().unwrap().to_string();
                    let line = format!(
                        r#"{{"id":"{id}","ts":"2026-11-30T09:00:00.000Z","session_id":"s","from":"role{from}","kind":"kind.{kind}","body":"é\n"}}"#
                    );
                    bytes.extend_from_slice(line.as_bytes());
                    bytes.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
                    ids.push(id);
                }
                Piece::Garbage(junk) => {
                    bytes.extend_from_slice(junk);
                    bytes.push(b'\n');
                }
                Piece::Blank => bytes.extend_from_slice(b"  \n"),
            }
        }
        (bytes, ids)
    }

    fn snapshot(index: &LineIndex) -> Vec<(String, String, String, u64, u32)> {
        index
            .lines()
            .iter()
            .map(|l| {
                (
                    l.id().to_owned(),
                    index.name(l.kind).to_owned(),
                    index.name(l.from).to_owned(),
                    l.offset,
                    l.len,
                )
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn appends_in_any_split_index_like_one_read(pieces in proptest::collection::vec(piece(), 0..40), cuts in proptest::collection::vec(any::<u16>(), 0..8)) {
            let (bytes, ids) = render(&pieces);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.jsonl");
            std::fs::write(&path, b"").unwrap();
            let mut index = LineIndex::new(&path);
            let mut cuts: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % (bytes.len() + 1)).collect();
            cuts.push(bytes.len());
            cuts.sort_unstable();
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            let mut at = 0;
            for cut in cuts {
                file.write_all(&bytes[at..cut]).unwrap();
                at = cut;
                let extension = index.extend().unwrap();
                prop_assert!(!extension.truncated);
            }
            let mut whole = LineIndex::new(&path);
            whole.extend().unwrap();
            prop_assert_eq!(snapshot(&index), snapshot(&whole));
            let got: Vec<String> = index.lines().iter().map(|l| l.id().to_owned()).collect();
            prop_assert_eq!(&got, &ids);
            // Every offset and length points at exactly the event's text.
            let texts = read_lines(&path, index.lines()).unwrap();
            for (line, text) in index.lines().iter().zip(texts) {
                let text = text.unwrap();
                let well_formed = text.starts_with("{\"id\":\"") && text.ends_with('}');
                prop_assert!(well_formed, "line text: {}", text);
                prop_assert_eq!(&text[7..33], line.id());
            }
            for (seq, id) in ids.iter().enumerate() {
                prop_assert_eq!(index.position(id), Some(seq));
                prop_assert_eq!(index.position_after(id), Some(seq + 1));
            }
        }

        #[test]
        fn hostile_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.jsonl");
            std::fs::write(&path, &bytes).unwrap();
            let mut index = LineIndex::new(&path);
            index.extend().unwrap();
            let _ = read_lines(&path, index.lines()).unwrap();
        }
    }

    #[test]
    fn batches_are_bounded_by_bytes_and_count() {
        let line = |len: u32| IndexedLine {
            offset: 0,
            len,
            kind: 0,
            from: 0,
            id: [b'0'; 26],
        };
        let big = u32::try_from(BATCH_BYTES / 2).unwrap();
        let lines = [line(big), line(big), line(big), line(10), line(10)];
        assert_eq!(batch_end(&lines, 0, 100), 2);
        assert_eq!(batch_end(&lines, 2, 100), 5);
        assert_eq!(batch_end(&lines, 3, 1), 4);
        assert_eq!(batch_end(&lines, 5, 100), 5);
        // A single line larger than the budget still makes progress.
        assert_eq!(batch_end(&[line(u32::MAX)], 0, 100), 1);
    }

    #[test]
    fn a_replaced_file_restarts_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let (bytes, ids) = render(&[
            Piece::Event {
                kind: 0,
                from: 0,
                crlf: false,
            },
            Piece::Event {
                kind: 1,
                from: 1,
                crlf: false,
            },
        ]);
        std::fs::write(&path, &bytes).unwrap();
        let mut index = LineIndex::new(&path);
        assert_eq!(index.extend().unwrap().added, 0..2);
        let (shorter, new_ids) = render(&[Piece::Event {
            kind: 2,
            from: 0,
            crlf: false,
        }]);
        std::fs::write(&path, &shorter).unwrap();
        let extension = index.extend().unwrap();
        assert!(extension.truncated);
        assert_eq!(extension.added, 0..1);
        assert_eq!(index.get(0).unwrap().id(), new_ids[0]);
        assert_ne!(new_ids[0], ids[0]);
        std::fs::remove_file(&path).unwrap();
        assert!(index.extend().unwrap().truncated);
        assert!(index.is_empty());
    }

    #[test]
    fn an_oversized_line_is_skipped_without_buffering_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut bytes = vec![b'x'; crate::transcript::framer::MAX_LINE_BYTES + 10];
        bytes.push(b'\n');
        let (tail, ids) = render(&[Piece::Event {
            kind: 0,
            from: 0,
            crlf: false,
        }]);
        bytes.extend_from_slice(&tail);
        std::fs::write(&path, &bytes).unwrap();
        let mut index = LineIndex::new(&path);
        index.extend().unwrap();
        assert_eq!(index.skipped, 1);
        assert_eq!(index.len(), 1);
        assert_eq!(index.get(0).unwrap().id(), ids[0]);
    }
}
