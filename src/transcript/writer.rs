//! The transcript writer: validates a draft, stamps a monotonic ULID and a timestamp, and appends
//! one whole line under an exclusive file lock.
//!
//! Many processes append to the same transcript (the runner, every `crumb event`). The lock makes
//! each append atomic whatever its size (`O_APPEND` alone is atomic only up to `PIPE_BUF`), and
//! reading the last line's id under the lock makes ids increase in
//! file order across processes, not just within one.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ulid::Ulid;

use super::event::{Draft, Event};
use super::validate::{Violations, check_draft, is_ulid};

/// Largest line the writer appends (4 MiB). Bigger payloads belong in artifact files referenced by
/// hash; a line this size already costs every replay and every tail.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// How far back from the end the writer looks for the start of the last line.
const TAIL_PROBE_BYTES: u64 = 4 * 1024;

/// Why an append failed. Nothing was written in any case.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("invalid event:\n{0}")]
    Invalid(Violations),
    #[error(
        "event is {bytes} bytes as a line; the limit is {limit} bytes (put large content in an artifact file)"
    )]
    TooLarge { bytes: usize, limit: usize },
    #[error("the ULID space after {0} is exhausted")]
    IdExhausted(String),
    #[error("cannot write transcript {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// Appends events to one transcript file.
pub struct Writer {
    path: PathBuf,
    session_id: String,
    file: File,
    last_id: Option<Ulid>,
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
        })
    }

    /// The transcript path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session id stamped on every event.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Validate `draft`, stamp it and append it as one line. Returns the event as written.
    pub fn append(&mut self, draft: Draft) -> Result<Event, WriteError> {
        let mut event = self.draft_event(draft)?;
        self.under_lock(|writer| writer.append_locked(&mut event))?;
        Ok(event)
    }

    fn append_locked(&mut self, event: &mut Event) -> Result<(), WriteError> {
        let (file_last_id, ends_with_newline) =
            last_line_id(&mut self.file).map_err(|source| self.io(source))?;
        let now = SystemTime::now();
        let id = next_id(self.last_id.max(file_last_id), now)?;
        event.id = id.to_string();
        event.ts = timestamp(now);

        let mut line = Vec::with_capacity(256);
        if !ends_with_newline {
            // Someone left a torn line; terminate it so ours stays whole (readers report the fragment).
            line.push(b'\n');
        }
        serde_json::to_writer(&mut line, &*event).map_err(|e| self.io(io::Error::other(e)))?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|source| self.io(source))?;
        self.last_id = Some(id);
        Ok(())
    }

    fn io(&self, source: io::Error) -> WriteError {
        WriteError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

impl Writer {
    /// Validate every draft, stamp them with increasing ids and append them as whole lines in one
    /// write under one lock: a reader, or a crash, sees all of them or none (a session's
    /// `session.start` and `goal` are never apart).
    pub fn append_all(&mut self, drafts: Vec<Draft>) -> Result<Vec<Event>, WriteError> {
        let mut events = drafts
            .into_iter()
            .map(|draft| self.draft_event(draft))
            .collect::<Result<Vec<_>, _>>()?;
        self.under_lock(|writer| writer.append_all_locked(&mut events))?;
        Ok(events)
    }

    /// Run `work` holding the file's exclusive lock, released whatever `work` returns.
    fn under_lock(
        &mut self,
        work: impl FnOnce(&mut Self) -> Result<(), WriteError>,
    ) -> Result<(), WriteError> {
        self.file.lock().map_err(|source| self.io(source))?;
        let result = work(self);
        let unlocked = self.file.unlock().map_err(|source| self.io(source));
        result?;
        unlocked
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

    fn append_all_locked(&mut self, events: &mut [Event]) -> Result<(), WriteError> {
        let (file_last_id, ends_with_newline) =
            last_line_id(&mut self.file).map_err(|source| self.io(source))?;
        let now = SystemTime::now();
        let mut floor = self.last_id.max(file_last_id);
        let mut lines = Vec::with_capacity(256 * events.len());
        if !ends_with_newline {
            lines.push(b'\n');
        }
        for event in events.iter_mut() {
            let id = next_id(floor, now)?;
            event.id = id.to_string();
            event.ts = timestamp(now);
            serde_json::to_writer(&mut lines, &*event).map_err(|e| self.io(io::Error::other(e)))?;
            lines.push(b'\n');
            floor = Some(id);
        }
        self.file
            .write_all(&lines)
            .map_err(|source| self.io(source))?;
        self.last_id = floor;
        Ok(())
    }
}

/// The id after `floor`: a fresh ULID of `now`, or `floor + 1` when the clock has not passed it.
fn next_id(floor: Option<Ulid>, now: SystemTime) -> Result<Ulid, WriteError> {
    let fresh = Ulid::from_datetime(now);
    match floor {
        Some(floor) if fresh <= floor => floor
            .increment()
            .ok_or_else(|| WriteError::IdExhausted(floor.to_string())),
        _ => Ok(fresh),
    }
}

/// RFC 3339 UTC with millisecond precision and `Z`.
pub fn timestamp(at: SystemTime) -> String {
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
