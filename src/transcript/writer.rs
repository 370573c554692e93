//! The transcript writer: validates a draft, stamps a ULID and a timestamp, and appends one whole
//! line under an exclusive file lock.
//!
//! Many processes append to the same transcript (the runner, every `crumb event`). The lock makes
//! each append atomic whatever its size (`O_APPEND` alone is atomic only up to `PIPE_BUF`), and
//! reading the last line's id under the lock makes ids increase in file order across processes,
//! not just within one.
//!
//! **Ids never run out.** A new id is the clock's, or one above the floor (the file's last id or
//! this writer's, whichever is higher) when the clock is not past it, carrying into the timestamp
//! if the random part is full. A floor whose time is more than [`MAX_CLOCK_LEAD_MS`] ahead of the
//! clock — a forged or corrupted line, the maximal id `7ZZZZZZZZZZZZZZZZZZZZZZZZZ` included — is
//! not a floor: ids go on from the clock and sort below that line. So ids are unique and increase
//! in file order except right after such a line; readers order events by their place in the file
//! and never by id (replay's duplicate rule does not need increasing ids).
//!
//! **An append never tears.** The line is written with one `write_all` under the lock; if that
//! fails part-way (a full disk, a file size limit), the file is cut back to the length it had before
//! the append, so it still ends with a whole line, and the error is returned.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ulid::Ulid;

use super::event::{Draft, Event};
use super::validate::{check_draft, is_ulid};
use super::violation::Violations;

/// Largest line the writer appends (4 MiB). Bigger payloads belong in artifact files referenced by
/// hash; a line this size already costs every replay and every tail.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// How far back from the end the writer looks for the start of the last line.
const TAIL_PROBE_BYTES: u64 = 4 * 1024;

/// How far ahead of the clock (24 hours) an id already in the file may lie and still be the floor
/// new ids go above: enough for a clock stepped back, not for a forged far-future line to pin
/// every later id (see the module docs).
pub(crate) const MAX_CLOCK_LEAD_MS: u64 = 24 * 60 * 60 * 1000;

/// Why an append failed. Nothing was written in any case (a partial write is cut back).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("invalid event:\n{0}")]
    Invalid(Violations),
    #[error(
        "event is {bytes} bytes as a line; the limit is {limit} bytes (put large content in an artifact file)"
    )]
    TooLarge { bytes: usize, limit: usize },
    #[error("cannot write transcript {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// Appends events to one transcript file.
pub struct Writer {
    path: PathBuf,
    session_id: String,
    file: File,
    last_id: Option<Ulid>,
    /// Set by [`Writer::halting`]: once an append failed to reach the file, this writer appends
    /// nothing more (see [`Writer::fault`]).
    halting: bool,
    fault: Option<String>,
    /// Test hook: write only this many bytes of the next line, then fail as a full disk would.
    #[cfg(test)]
    fail_after: Option<usize>,
}

impl Writer {
    /// Open (creating if needed) the transcript at `path` for session `session_id`.
    pub fn open(
        path: impl AsRef<Path>,
        session_id: impl Into<String>,
    ) -> Result<Writer, WriteError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|source| WriteError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(Writer {
            path,
            session_id: session_id.into(),
            file,
            last_id: None,
            halting: false,
            fault: None,
            #[cfg(test)]
            fail_after: None,
        })
    }

    /// A writer that stops at its first failed write: every later append fails with the same
    /// cause and writes nothing. The coordinator's writer is one, so no event it writes after a
    /// failed one (an `agent.stop` after a lost `error`, a `done` after a lost outcome) can make
    /// the engine decide on what was never recorded.
    pub(crate) fn halting(mut self) -> Self {
        self.halting = true;
        self
    }

    /// Stop a halting writer for a cause found outside it (the disk too full to rely on).
    pub(crate) fn halt(&mut self, cause: String) {
        if self.halting {
            self.fault.get_or_insert(cause);
        }
    }

    /// Why a halting writer stopped, if it did.
    pub(crate) fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    /// The transcript path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Validate `draft`, stamp it and append it as one line. Returns the event as written.
    pub fn append(&mut self, draft: Draft) -> Result<Event, WriteError> {
        let mut events = self.append_all(vec![draft])?;
        Ok(events.remove(0))
    }

    /// Validate every draft, stamp them with increasing ids and append them as whole lines in one
    /// write under one lock: a reader, or a crash, sees all of them or none (a session's
    /// `session.start` and `goal` are never apart).
    pub fn append_all(&mut self, drafts: Vec<Draft>) -> Result<Vec<Event>, WriteError> {
        self.append_all_located(drafts).map(|(events, _)| events)
    }

    /// [`Writer::append`], also returning the byte offset at which the event's line starts (a
    /// capability record points at its turn's `agent.wake` this way).
    pub fn append_located(&mut self, draft: Draft) -> Result<(Event, u64), WriteError> {
        let (mut events, offset) = self.append_all_located(vec![draft])?;
        Ok((events.remove(0), offset))
    }

    fn append_all_located(&mut self, drafts: Vec<Draft>) -> Result<(Vec<Event>, u64), WriteError> {
        if let Some(fault) = &self.fault {
            return Err(self.io(io::Error::other(format!(
                "an earlier append failed ({fault}); nothing more is written"
            ))));
        }
        let mut events = drafts
            .into_iter()
            .map(|draft| self.draft_event(draft))
            .collect::<Result<Vec<_>, _>>()?;
        self.file.lock().map_err(|source| self.io(source))?;
        let result = self.append_locked(&mut events);
        let unlocked = self.file.unlock().map_err(|source| self.io(source));
        let written = result.and_then(|offset| unlocked.map(|()| offset));
        if self.halting
            && let Err(WriteError::Io { source, .. }) = &written
        {
            self.fault = Some(format!("cannot append to the transcript: {source}"));
        }
        Ok((events, written?))
    }

    /// Validate `draft` and measure its line before any lock is taken: placeholder id and
    /// timestamp have the final lengths.
    fn draft_event(&self, draft: Draft) -> Result<Event, WriteError> {
        let problems = check_draft(&draft);
        if !problems.is_empty() {
            return Err(WriteError::Invalid(Violations(problems)));
        }
        let event = draft.into_event(
            Ulid::nil().to_string(),
            timestamp(SystemTime::now()),
            self.session_id.clone(),
        );
        let bytes = serde_json::to_vec(&event).map_or(0, |line| line.len() + 1);
        if bytes > MAX_LINE_BYTES {
            return Err(WriteError::TooLarge {
                bytes,
                limit: MAX_LINE_BYTES,
            });
        }
        Ok(event)
    }

    /// Append under the lock; returns where the first event's line starts.
    fn append_locked(&mut self, events: &mut [Event]) -> Result<u64, WriteError> {
        let (file_last_id, ends_with_newline) =
            last_line_id(&mut self.file).map_err(|source| self.io(source))?;
        let now = SystemTime::now();
        let mut floor = self.last_id.max(file_last_id);
        let mut lines = Vec::with_capacity(256 * events.len());
        if !ends_with_newline {
            // Someone left a torn line; terminate it so ours stays whole (readers report the fragment).
            lines.push(b'\n');
        }
        for event in events.iter_mut() {
            let id = next_id(floor, Ulid::from_datetime(now));
            event.id = id.to_string();
            event.ts = timestamp(now);
            serde_json::to_writer(&mut lines, &*event).map_err(|e| self.io(io::Error::other(e)))?;
            lines.push(b'\n');
            floor = Some(id);
        }
        let before = self.write_whole(&lines)?;
        self.last_id = floor;
        Ok(before + u64::from(!ends_with_newline))
    }

    /// Append `bytes` (whole lines) with one `write_all`; on failure cut the file back to its
    /// length before, so a full disk leaves no half line behind. The caller holds the lock.
    /// Returns the length the file had before.
    fn write_whole(&mut self, bytes: &[u8]) -> Result<u64, WriteError> {
        let before = self
            .file
            .metadata()
            .map_err(|source| self.io(source))?
            .len();
        let Err(source) = self.write_bytes(bytes) else {
            return Ok(before);
        };
        match self.file.set_len(before) {
            Ok(()) => Err(self.io(source)),
            Err(cut) => Err(self.io(io::Error::new(
                source.kind(),
                format!("{source}; cutting the partial line back also failed: {cut}"),
            ))),
        }
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        #[cfg(test)]
        if let Some(keep) = self.fail_after.take() {
            self.file.write_all(&bytes[..keep.min(bytes.len())])?;
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device (injected)",
            ));
        }
        self.file.write_all(bytes)
    }

    fn io(&self, source: io::Error) -> WriteError {
        WriteError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// The id after `floor` for an append at `fresh` (the clock's id): see the module docs. Never
/// fails: a floor within [`MAX_CLOCK_LEAD_MS`] of the clock is far below the maximal id, and any
/// other floor is ignored.
fn next_id(floor: Option<Ulid>, fresh: Ulid) -> Ulid {
    let horizon = fresh.timestamp_ms().saturating_add(MAX_CLOCK_LEAD_MS);
    match floor.filter(|floor| floor.timestamp_ms() <= horizon) {
        // `+ 1` on the whole 128 bits: a full random part carries into the next millisecond.
        Some(floor) if fresh <= floor => floor.0.checked_add(1).map_or(fresh, Ulid),
        _ => fresh,
    }
}

/// RFC 3339 UTC with millisecond precision and `Z`.
pub(crate) fn timestamp(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The id of the file's last non-blank line if it starts the way our writer writes lines
/// (`{"id":"<ULID>"`), and whether the file is empty or ends with a newline.
fn last_line_id(file: &mut File) -> io::Result<(Option<Ulid>, bool)> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok((None, true));
    }
    let start = len.saturating_sub(TAIL_PROBE_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    file.take(TAIL_PROBE_BYTES).read_to_end(&mut tail)?;
    let ends_with_newline = tail.last() == Some(&b'\n');
    let trimmed = trim_end_whitespace(&tail);
    let line_start = trimmed
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    if line_start == 0 && start > 0 {
        // The last line is longer than the probe; read its head from wherever it starts.
        let head = long_line_head(file, start)?;
        return Ok((parse_id_prefix(&head), ends_with_newline));
    }
    Ok((parse_id_prefix(&trimmed[line_start..]), ends_with_newline))
}

/// Head of a line that starts before `before`: scan backwards for its start and read 64 bytes.
fn long_line_head(file: &mut File, before: u64) -> io::Result<Vec<u8>> {
    let mut end = before;
    let mut chunk = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let size = usize::try_from(end - start).unwrap_or(0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..size])?;
        if let Some(i) = chunk[..size].iter().rposition(|&b| b == b'\n') {
            return read_head(file, start + i as u64 + 1);
        }
        end = start;
    }
    read_head(file, 0)
}

fn read_head(file: &mut File, at: u64) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(64);
    file.seek(SeekFrom::Start(at))?;
    file.take(64).read_to_end(&mut head)?;
    Ok(head)
}

fn trim_end_whitespace(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

fn parse_id_prefix(line: &[u8]) -> Option<Ulid> {
    let rest = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let rest = rest.strip_prefix(br#"{"id":""#)?;
    let id = std::str::from_utf8(rest.get(..26)?).ok()?;
    if is_ulid(id) {
        Ulid::from_string(id).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::transcript::Kind;

    const MAXIMAL: &str = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ";

    fn line_with_id(id: &str) -> String {
        format!(
            r#"{{"id":"{id}","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"user","kind":"goal"}}"#
        )
    }

    #[test]
    fn a_floor_the_clock_has_not_passed_is_stepped_over_even_with_a_full_random_part() {
        let now = SystemTime::now();
        let fresh = Ulid::from_datetime(now);
        let ahead = Ulid::from_parts(fresh.timestamp_ms() + 60_000, 5);
        assert_eq!(next_id(Some(ahead), fresh), Ulid(ahead.0 + 1));
        let full = Ulid::from_parts(fresh.timestamp_ms() + 60_000, (1u128 << 80) - 1);
        let next = next_id(Some(full), fresh);
        assert_eq!(next.timestamp_ms(), full.timestamp_ms() + 1, "carried");
        assert!(next > full);
        assert_eq!(next_id(None, fresh), fresh);
        let past = Ulid::from_datetime(now - Duration::from_secs(60));
        assert_eq!(next_id(Some(past), fresh), fresh);
    }

    #[test]
    fn a_floor_far_ahead_of_the_clock_is_ignored() {
        let fresh = Ulid::from_datetime(SystemTime::now());
        let maximal = Ulid::from_string(MAXIMAL).unwrap();
        assert_eq!(next_id(Some(maximal), fresh), fresh);
        let next_year = Ulid::from_parts(fresh.timestamp_ms() + 366 * 24 * 3_600_000, 0);
        assert_eq!(next_id(Some(next_year), fresh), fresh);
    }

    #[test]
    fn appends_go_on_after_a_maximal_id_and_increase_from_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        std::fs::write(&path, format!("{}\n", line_with_id(MAXIMAL))).unwrap();
        let first = Writer::open(&path, "s")
            .unwrap()
            .append(Draft::new("builder", Kind::Note))
            .unwrap();
        let second = Writer::open(&path, "s")
            .unwrap()
            .append(Draft::new("builder", Kind::Note))
            .unwrap();
        assert!(first.id.as_str() < MAXIMAL, "{}", first.id);
        assert!(second.id > first.id, "{} then {}", first.id, second.id);
    }

    #[test]
    fn a_write_that_fails_part_way_is_cut_back_to_the_last_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let mut writer = Writer::open(&path, "s").unwrap();
        writer.append(Draft::new("builder", Kind::Note)).unwrap();
        let before = std::fs::read(&path).unwrap();
        for keep in [0, 1, 40, 10_000] {
            writer.fail_after = Some(keep);
            let err = writer
                .append(Draft::new("builder", Kind::Build).body("b"))
                .unwrap_err();
            assert!(
                matches!(&err, WriteError::Io { source, .. } if source.kind() == io::ErrorKind::StorageFull),
                "{err}"
            );
            assert_eq!(std::fs::read(&path).unwrap(), before, "after {keep} bytes");
        }
        writer.append(Draft::new("builder", Kind::Build)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn a_failed_append_after_a_torn_line_leaves_the_file_as_it_found_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let torn = "{\"id\":\"01JZ0000000000000000000001\",\"ts\":\"20";
        std::fs::write(&path, torn).unwrap();
        let mut writer = Writer::open(&path, "s").unwrap();
        writer.fail_after = Some(3);
        assert!(writer.append(Draft::new("builder", Kind::Note)).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), torn);
    }
}
