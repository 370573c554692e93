//! A storage fault is never an outcome. The coordinator's writer halts at its first failed write
//! (`Writer::halting`), when a write the turn needs outside the transcript failed (its prompt,
//! capability record, log or adapter files), or when a turn failed while the disk was too full to
//! trust its writes; the coordinator then stops like an interrupted run, with the turn still owed,
//! and the run exits with the internal-error code naming the cause and the free space. `crumb
//! resume` goes on once the cause is fixed and reaches the outcome an unfaulted run reaches.

use std::path::Path;

use super::SharedWriter;
use crate::runtime::session_dir::SessionDir;

/// Why the session stopped.
#[derive(Debug, thiserror::Error)]
#[error(
    "a write to the session failed ({cause}); {free} — the session stopped where it was and \
     nothing was decided on the lost write: fix the cause, then `crumb resume {id}`"
)]
pub struct StorageFault {
    cause: String,
    free: String,
    id: String,
}

impl StorageFault {
    /// The fault of a write to `session` that failed with `cause` outside the coordinator (its
    /// `meta.json` around a drive).
    pub(crate) fn at(session: &SessionDir, cause: &dyn std::error::Error) -> StorageFault {
        StorageFault {
            cause: cause.to_string(),
            free: free_space(session.path()),
            id: session.id().to_owned(),
        }
    }
}

/// The fault to stop with, if the writer halted.
pub(super) fn of(writer: &SharedWriter, session: &SessionDir) -> Option<StorageFault> {
    let cause = writer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .fault()?
        .to_owned();
    Some(StorageFault {
        cause,
        free: free_space(session.path()),
        id: session.id().to_owned(),
    })
}

/// `N KiB free on the session's file system` for the file system holding `path` (the nearest
/// folder that exists), as every storage fault says it.
pub(crate) fn free_space(path: &Path) -> String {
    let existing = path.ancestors().find(|p| p.exists()).unwrap_or(path);
    nix::sys::statvfs::statvfs(existing).map_or_else(
        |e| format!("free space unknown ({e})"),
        |stats| {
            let bytes = stats
                .blocks_available()
                .saturating_mul(stats.fragment_size());
            let inodes = if stats.files() > 0 && stats.files_available() == 0 {
                ", no inode free"
            } else {
                ""
            };
            format!(
                "{} KiB free on the session's file system{inodes}",
                bytes / 1024
            )
        },
    )
}
