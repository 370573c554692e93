//! `studio.snapshot`: Studio's fold of a long session, kept beside its transcript so opening the
//! session (after a restart of Studio too) reads only the lines appended since.
//!
//! It is [`crate::runtime::state_snapshot`] (`crumb status`'s) plus what only Studio folds: the
//! rounds (the story line), the count of each route taken, the live turn, the time spent waiting
//! for a person and the adapters' cost. Those need every event from the first, so Studio cannot go
//! on from `state.snapshot` alone; it keeps its own, checked exactly the same way (format, crumb
//! version, table digest, and [`state_snapshot::still_holds`] for the prefix it covers) and, like
//! that one, a cache: anything that does not match discards it and the session is folded from its
//! start (said on stderr with `CRUMB_DEBUG`). Studio writes it after a fold that read at least
//! [`state_snapshot::MIN_LINES`] lines or [`state_snapshot::MIN_BYTES`] bytes past the last one,
//! so the first open of a long session pays the full fold once and every later open does not.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::fold_snapshot::FoldSnapshot;
use crate::engine::story::StoryFold;
use crate::runtime::state_snapshot::{self, Prefix};

/// A role's turn in progress, for "running: who, since when" and its live log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveTurn {
    pub role: String,
    pub since: String,
    /// The turn's log, relative to the session (`logs/<role>-<n>.log`).
    pub log: Option<String>,
}

/// The snapshot's name in the session folder.
pub(crate) const VIEW_SNAPSHOT_FILE: &str = "studio.snapshot";
/// Bumped whenever the file's shape or the fold's meaning changes.
pub(crate) const FORMAT: u32 = 1;

/// The file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ViewSnapshot {
    pub format: u32,
    pub crumb_version: String,
    pub table_digest: String,
    pub prefix: Prefix,
    pub fold: FoldSnapshot,
    pub story: StoryFold,
    /// `(route index, source node, times taken)`.
    pub route_counts: Vec<(usize, String, u64)>,
    pub live_turn: Option<LiveTurn>,
    pub waited_ms: i64,
    pub waiting_since_ms: Option<i64>,
    /// The bits of the `f64` (a decimal round trip could differ in the last place, and the sum
    /// goes on from it).
    pub cost_usd_bits: u64,
    pub costed_turns: u32,
}

/// Where the snapshot of the transcript at `transcript` lives: next to it.
pub(crate) fn path_for(transcript: &Path) -> PathBuf {
    transcript.with_file_name(VIEW_SNAPSHOT_FILE)
}

/// The snapshot of `transcript` when it is one this crumb made with the table of `digest` and the
/// transcript still holds the prefix it covers; otherwise `None` (said by
/// [`state_snapshot::debug`] unless there is no snapshot at all).
pub(crate) fn load(transcript: &Path, digest: &str) -> Option<ViewSnapshot> {
    let path = path_for(transcript);
    let bytes = match crate::fs::bounded_read::read(&path, state_snapshot::MAX_SNAPSHOT_BYTES) {
        Ok(bytes) => bytes,
        Err(err) if err.is_not_found() => return None,
        Err(err) => {
            state_snapshot::debug(&format!("{} not used: {err}", path.display()));
            return None;
        }
    };
    match check(&bytes, transcript, digest) {
        Ok(snapshot) => {
            state_snapshot::debug(&format!(
                "{} used: folding from line {}",
                path.display(),
                snapshot.prefix.lines + 1
            ));
            Some(snapshot)
        }
        Err(why) => {
            state_snapshot::debug(&format!(
                "{} not used ({why}); folding the transcript from its start",
                path.display()
            ));
            None
        }
    }
}

fn check(bytes: &[u8], transcript: &Path, digest: &str) -> Result<ViewSnapshot, String> {
    let snapshot: ViewSnapshot =
        serde_json::from_slice(bytes).map_err(|e| format!("unreadable: {e}"))?;
    if snapshot.format != FORMAT {
        return Err(format!("format {} is not {FORMAT}", snapshot.format));
    }
    if snapshot.crumb_version != env!("CARGO_PKG_VERSION") {
        return Err(format!("written by crumb {}", snapshot.crumb_version));
    }
    if snapshot.table_digest != digest {
        return Err("folded with another pipeline table".to_owned());
    }
    if snapshot.fold.stats.lines != snapshot.prefix.lines || snapshot.prefix.lines == u64::MAX {
        return Err("inconsistent".to_owned());
    }
    let file = File::open(transcript).map_err(|e| format!("cannot open the transcript: {e}"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot stat the transcript: {e}"))?
        .len();
    state_snapshot::still_holds(&snapshot.prefix, &file, len)?;
    Ok(snapshot)
}

/// The prefix record of `transcript`'s first `offset` bytes (`lines` lines), when `offset` ends a
/// line.
pub(crate) fn prefix(transcript: &Path, offset: u64, lines: u64) -> std::io::Result<Prefix> {
    let file = File::open(transcript)?;
    let mut last = [0u8; 1];
    if offset == 0 || file.read_exact_at(&mut last, offset - 1).is_err() || last[0] != b'\n' {
        return Err(std::io::Error::other("the fold does not end at a line end"));
    }
    state_snapshot::prefix_of(&file, offset, lines)
}

/// Write `snapshot` (a temporary file renamed over the old one).
pub(crate) fn save(transcript: &Path, snapshot: &ViewSnapshot) -> std::io::Result<()> {
    let text = serde_json::to_vec(snapshot).map_err(std::io::Error::other)?;
    crate::runtime::meta::write_atomically(&path_for(transcript), &text)
}
