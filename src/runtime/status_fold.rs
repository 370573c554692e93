//! The fold `crumb status` shows — the state, the last events and each role's usage — read from
//! the session's [`state_snapshot`] and the lines appended after it, and saved back as the next
//! snapshot (see that module for when a snapshot is used, written and discarded).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use indexmap::IndexMap;

use super::session_read::{OpenError, fold_resuming};
use super::state_snapshot::{self, RECENT_KEPT, Snapshot};
use crate::adapters::Usage;
use crate::engine::Replay;
use crate::engine::state::EventSummary;
use crate::pipeline::table::TransitionTable;
use crate::transcript::reader::each_event_after;
use crate::transcript::recent_ids::RecentIds;
use crate::transcript::{Event, Kind};

/// What `crumb status` shows of a session.
pub(crate) struct StatusFold {
    pub replay: Replay,
    /// The last folded events, oldest first.
    pub recent: VecDeque<EventSummary>,
    /// Each role's usage, in the order roles first reported one.
    pub usage: IndexMap<String, Usage>,
}

/// Fold the session transcript at `path` through `table` from its snapshot (when valid), sum the
/// usage of the same bytes, keep the last `keep` (at most [`RECENT_KEPT`]) events, and save the
/// next snapshot when the session is long enough.
pub(crate) fn fold_for_status(
    path: &Path,
    table: &TransitionTable,
    keep: usize,
) -> Result<StatusFold, OpenError> {
    let folded = fold_resuming(path, table, RECENT_KEPT.max(keep))?;
    let resume = &folded.resume;
    let usage = usage_by_role(&resume.file, resume.end, resume.from.as_ref());
    resume.save(path, &folded.replay, &folded.recent, usage.clone());
    let mut recent = folded.recent;
    while recent.len() > keep {
        recent.pop_front();
    }
    Ok(StatusFold {
        replay: folded.replay,
        recent,
        usage,
    })
}

/// Bring a long session's snapshot up to date (a coordinator that ends does this, so the next
/// `crumb status` reads only what was appended after it). `events` is what the caller folded: a
/// session below the snapshot thresholds is left alone without reading anything.
pub(crate) fn refresh_if_long(path: &Path, table: &TransitionTable, events: u64) {
    let bytes = std::fs::metadata(path).map_or(0, |meta| meta.len());
    if !state_snapshot::worth_keeping(bytes, events) {
        return;
    }
    if let Err(err) = fold_for_status(path, table, 0) {
        state_snapshot::debug(&format!(
            "no snapshot written for {}: {err}",
            path.display()
        ));
    }
}

/// Each role's usage over the first `end` bytes of the transcript open as `file`, read with the
/// folding readers' rules (`reader::each_event`): a duplicated `agent.stop` line is skipped, as
/// replay skips it, so tokens are never counted twice. With a snapshot, only the bytes after the
/// prefix it covers are read, going on from its sums and its duplicate-id window.
pub(crate) fn usage_by_role(
    file: &File,
    end: u64,
    from: Option<&Snapshot>,
) -> IndexMap<String, Usage> {
    let (mut by_role, start, ids) = match from {
        Some(snapshot) => (
            snapshot.usage.clone(),
            snapshot.prefix.offset,
            snapshot.fold.ids.clone(),
        ),
        None => (IndexMap::new(), 0, RecentIds::default()),
    };
    let mut input = file;
    if input.seek(SeekFrom::Start(start)).is_err() {
        return by_role;
    }
    each_event_after(
        std::io::BufReader::with_capacity(64 * 1024, input.take(end.saturating_sub(start))),
        ids,
        |event: Event| {
            if let (Kind::AgentStop, Some(metadata)) = (&event.kind, &event.metadata) {
                by_role
                    .entry(event.from.clone())
                    .or_default()
                    .absorb(&Usage::from_metadata(metadata));
            }
        },
        |_| {},
    );
    by_role
}
