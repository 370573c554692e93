//! `state.snapshot`: a long session's folded state, kept next to its transcript so `crumb status`
//! folds the transcript once and afterwards only the lines appended since.
//!
//! The file records what it covers — the transcript's first `offset` bytes (always a whole number
//! of lines), `lines` lines — and what it was folded with: the snapshot format, the crumb version
//! and the digest of the compiled table. It is a cache, never the truth: anything that does not
//! match (another format, version or table, a file it cannot read or parse, a prefix that changed)
//! discards it and the transcript is folded from the start. A discard is never an error; with
//! `CRUMB_DEBUG` set it is said on stderr.
//!
//! **When is the prefix "the same"?** Hashing a 350 MB prefix on every `status` would cost more
//! than the fold it saves, so the check is a sample: the file must be the same file (device and
//! inode), at least `offset` bytes long, and the SHA-256 of its first [`HEAD`] bytes, of the
//! [`SAMPLES`] blocks of [`SAMPLE`] bytes spread evenly over the prefix and of its last [`TAIL`]
//! bytes (the last lines before the offset, ending with a newline) must equal the recorded one.
//! That is sound for what can happen to a transcript: crumb's writer only appends whole lines (a
//! torn append is cut back, `transcript::writer`), so a prefix changes only when someone rewrote
//! the file. Rewriting it through a new file (an editor, `sed -i`, a copy renamed into place)
//! changes the inode; a truncation makes it shorter; an edit of the first or last lines, or of a
//! line that crosses a sampled block, changes the hash. An in-place edit of the same length that
//! touches none of the sampled bytes (about 0.3 MB of a 350 MB prefix) is **not** detected: that
//! is the price of a check that costs about a millisecond.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::adapters::Usage;
use crate::engine::fold_snapshot::FoldSnapshot;
use crate::engine::state::EventSummary;
use crate::pipeline::table::TransitionTable;

/// The snapshot's name in the session folder.
pub(crate) const SNAPSHOT_FILE: &str = "state.snapshot";
/// Bumped whenever the file's shape or the fold's meaning changes.
pub(crate) const FORMAT: u32 = 1;
/// Longest snapshot read (the state is O(1)-sized per event, so a real one is a few KiB).
pub(crate) const MAX_SNAPSHOT_BYTES: u64 = 16 * 1024 * 1024;
/// A transcript is worth a snapshot from this many lines…
pub(crate) const MIN_LINES: u64 = 10_000;
/// …or this many bytes.
pub(crate) const MIN_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes hashed at the start of the prefix.
pub(crate) const HEAD: u64 = 64 * 1024;
/// Bytes hashed at the end of the prefix.
pub(crate) const TAIL: u64 = 64 * 1024;
/// Blocks sampled evenly in between.
pub(crate) const SAMPLES: u64 = 64;
/// Size of one sampled block.
pub(crate) const SAMPLE: u64 = 4 * 1024;
/// How many of the latest folded events the snapshot keeps (`crumb status` lists ten).
pub(crate) const RECENT_KEPT: usize = 10;

/// The file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    pub format: u32,
    pub crumb_version: String,
    /// [`table_digest`] of the table the prefix was folded through.
    pub table_digest: String,
    pub prefix: Prefix,
    pub fold: FoldSnapshot,
    /// The latest folded events, oldest first (at most [`RECENT_KEPT`]).
    pub recent: Vec<EventSummary>,
    /// Each role's usage summed over the prefix (`crumb status`'s usage block).
    pub usage: IndexMap<String, Usage>,
}

/// What part of which file a snapshot covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Prefix {
    /// Bytes covered; the byte before it is a newline.
    pub offset: u64,
    /// Lines covered.
    pub lines: u64,
    pub device: u64,
    pub inode: u64,
    /// [`fingerprint`] of the first `offset` bytes.
    pub fingerprint: String,
}

/// The digest a snapshot is tied to: the compiled table as JSON with every object's keys sorted
/// (the table holds a hash map, whose order differs from process to process).
pub(crate) fn table_digest(table: &TransitionTable) -> String {
    let mut value = serde_json::to_value(table).unwrap_or_default();
    sort_keys(&mut value);
    crumb_core::digest::sha256_hex(value.to_string().as_bytes())
}

fn sort_keys(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.sort_keys();
            map.values_mut().for_each(sort_keys);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// Where the snapshot of the transcript at `transcript` lives: next to it.
pub(crate) fn path_for(transcript: &Path) -> PathBuf {
    transcript.with_file_name(SNAPSHOT_FILE)
}

/// Whether a prefix this long is worth a file (small sessions fold in milliseconds anyway).
pub(crate) fn worth_keeping(offset: u64, lines: u64) -> bool {
    lines > MIN_LINES || offset > MIN_BYTES
}

/// Say `message` on stderr when `CRUMB_DEBUG` is set (why a snapshot was not used or written).
pub(crate) fn debug(message: &str) {
    if std::env::var_os("CRUMB_DEBUG").is_some_and(|v| !v.is_empty()) {
        eprintln!("crumb: debug: {message}");
    }
}

/// SHA-256 over the sampled bytes of `file`'s first `offset` bytes (see the module docs).
pub(crate) fn fingerprint(file: &File, offset: u64) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    let mut take = |start: u64, len: u64| -> std::io::Result<()> {
        let len = len.min(offset.saturating_sub(start));
        let at = bytes.len();
        bytes.resize(at + usize::try_from(len).unwrap_or(0), 0);
        file.read_exact_at(&mut bytes[at..], start)
    };
    take(0, HEAD)?;
    if offset > SAMPLE {
        let span = offset - SAMPLE;
        for i in 0..SAMPLES {
            take(span / (SAMPLES - 1) * i, SAMPLE)?;
        }
    }
    take(offset.saturating_sub(TAIL), TAIL)?;
    Ok(crumb_core::digest::sha256_hex(&bytes))
}

/// The prefix record for `file`'s first `offset` bytes and `lines` lines.
pub(crate) fn prefix_of(file: &File, offset: u64, lines: u64) -> std::io::Result<Prefix> {
    let meta = file.metadata()?;
    Ok(Prefix {
        offset,
        lines,
        device: meta.dev(),
        inode: meta.ino(),
        fingerprint: fingerprint(file, offset)?,
    })
}

/// The snapshot of `transcript` (open as `file`, `len` bytes long) when it is one this crumb made
/// with the table of `digest` and the file still holds the prefix it covers; otherwise `None`,
/// said by [`debug`] unless there is no snapshot at all.
pub(crate) fn load(transcript: &Path, file: &File, len: u64, digest: &str) -> Option<Snapshot> {
    let path = path_for(transcript);
    match read_valid(&path, file, len, digest) {
        Ok(snapshot) => {
            debug(&format!(
                "{} used: folding from line {} (byte {})",
                path.display(),
                snapshot.prefix.lines + 1,
                snapshot.prefix.offset
            ));
            Some(snapshot)
        }
        Err(Discard::Absent) => None,
        Err(Discard::Because(why)) => {
            debug(&format!(
                "{} not used ({why}); folding the transcript from its start",
                path.display()
            ));
            None
        }
    }
}

/// Why a snapshot was not used.
enum Discard {
    Absent,
    Because(String),
}

fn read_valid(path: &Path, file: &File, len: u64, digest: &str) -> Result<Snapshot, Discard> {
    let because = |why: String| Discard::Because(why);
    let bytes = match crate::fs::bounded_read::read(path, MAX_SNAPSHOT_BYTES) {
        Ok(bytes) => bytes,
        Err(err) if err.is_not_found() => return Err(Discard::Absent),
        Err(err) => return Err(because(format!("cannot read it: {err}"))),
    };
    let snapshot: Snapshot =
        serde_json::from_slice(&bytes).map_err(|e| because(format!("unreadable: {e}")))?;
    if snapshot.format != FORMAT {
        return Err(because(format!(
            "format {} is not {FORMAT}",
            snapshot.format
        )));
    }
    if snapshot.crumb_version != env!("CARGO_PKG_VERSION") {
        return Err(because(format!(
            "written by crumb {}",
            snapshot.crumb_version
        )));
    }
    if snapshot.table_digest != digest {
        return Err(because("folded with another pipeline table".to_owned()));
    }
    let prefix = &snapshot.prefix;
    if snapshot.fold.stats.lines != prefix.lines
        || prefix.lines == u64::MAX
        || snapshot.recent.len() > RECENT_KEPT
    {
        return Err(because("inconsistent".to_owned()));
    }
    still_holds(prefix, file, len).map_err(because)?;
    Ok(snapshot)
}

/// Whether the transcript open as `file` (`len` bytes long) still holds `prefix`: the same file,
/// at least as long, and the same sampled bytes (see the module docs); otherwise why not. Every
/// cache kept beside a transcript (this snapshot, Studio's) is checked this way.
pub(crate) fn still_holds(prefix: &Prefix, file: &File, len: u64) -> Result<(), String> {
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat the transcript: {e}"))?;
    if (meta.dev(), meta.ino()) != (prefix.device, prefix.inode) {
        return Err("the transcript is another file now".to_owned());
    }
    if len < prefix.offset {
        return Err(format!(
            "the transcript is shorter ({len} bytes) than the {} it covers",
            prefix.offset
        ));
    }
    let now =
        fingerprint(file, prefix.offset).map_err(|e| format!("cannot read the transcript: {e}"))?;
    if now != prefix.fingerprint {
        return Err("the transcript's first bytes changed since it was written".to_owned());
    }
    Ok(())
}

/// Write `snapshot` for `transcript` the way `meta.json` is written (a temporary file renamed over
/// the old one), so a reader sees the old snapshot or the new one, never half of one.
pub(crate) fn save(transcript: &Path, snapshot: &Snapshot) -> std::io::Result<()> {
    let text = serde_json::to_vec(snapshot).map_err(std::io::Error::other)?;
    super::meta::write_atomically(&path_for(transcript), &text)
}

/// Keep the last [`RECENT_KEPT`] of `recent`.
pub(crate) fn keep_recent(recent: &VecDeque<EventSummary>) -> Vec<EventSummary> {
    recent
        .iter()
        .skip(recent.len().saturating_sub(RECENT_KEPT))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use proptest::prelude::*;

    use super::{FORMAT, Snapshot, load, path_for, prefix_of, table_digest};
    use crate::engine::Replay;
    use crate::engine::fold_snapshot::FoldSnapshot;
    use crate::runtime::session_read::compile_source;

    /// A transcript of `lines` notes and a valid snapshot of all of it, in a scratch folder.
    fn valid(lines: u64) -> (tempfile::TempDir, std::path::PathBuf, String, Vec<u8>) {
        let table = compile_source(
            include_str!("../../tests/fixtures/run/casual-static.yaml"),
            std::path::Path::new("casual-static.yaml"),
        )
        .expect("casual-static compiles");
        let dir = tempfile::tempdir().expect("tempdir");
        let transcript = dir.path().join("transcript.jsonl");
        let mut file = std::fs::File::create(&transcript).expect("create");
        let mut replay = Replay::new();
        for n in 0..lines {
            let line = format!(
                r#"{{"id":"01JZ0000000000000000{n:06}","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"system","kind":"note","body":"n"}}"#
            );
            replay.fold_line(&table, n + 1, line.as_bytes());
            writeln!(file, "{line}").expect("write");
        }
        let file = std::fs::File::open(&transcript).expect("open");
        let len = file.metadata().expect("stat").len();
        let snapshot = Snapshot {
            format: FORMAT,
            crumb_version: env!("CARGO_PKG_VERSION").to_owned(),
            table_digest: table_digest(&table),
            prefix: prefix_of(&file, len, lines).expect("prefix"),
            fold: FoldSnapshot::of(&replay),
            recent: Vec::new(),
            usage: indexmap::IndexMap::new(),
        };
        let bytes = serde_json::to_vec(&snapshot).expect("serialises");
        (dir, transcript, table_digest(&table), bytes)
    }

    #[test]
    fn a_valid_snapshot_is_used() {
        let (_dir, transcript, digest, bytes) = valid(30);
        std::fs::write(path_for(&transcript), &bytes).expect("write");
        let file = std::fs::File::open(&transcript).expect("open");
        let len = file.metadata().expect("stat").len();
        let snapshot = load(&transcript, &file, len, &digest).expect("used");
        assert_eq!(snapshot.prefix.lines, 30);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the snapshot file holds — noise, or a valid one cut short or with a byte
        /// changed — reading it never panics, and a changed one is used only if it still parses
        /// to a snapshot that passes every check.
        #[test]
        fn any_snapshot_file_is_used_or_discarded_without_panicking(
            noise in prop::collection::vec(any::<u8>(), 0..200),
            cut in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
            byte: u8,
            kind in 0u8..3,
        ) {
            let (_dir, transcript, digest, valid) = valid(5);
            let bytes = match kind {
                0 => noise,
                1 => valid[..cut.index(valid.len())].to_vec(),
                _ => {
                    let mut bent = valid.clone();
                    let at = flip.index(bent.len());
                    bent[at] = byte;
                    bent
                }
            };
            std::fs::write(path_for(&transcript), &bytes).expect("write");
            let file = std::fs::File::open(&transcript).expect("open");
            let len = file.metadata().expect("stat").len();
            if let Some(snapshot) = load(&transcript, &file, len, &digest) {
                prop_assert!(snapshot.prefix.offset <= len);
                let _ = snapshot.fold.into_replay();
            }
        }
    }
}
