//! A storage fault is never an outcome. The coordinator's writer halts at its first failed write
//! (`Writer::halting`), or when a turn failed while the disk was too full to trust its writes;
//! the coordinator then stops like an interrupted run, with the turn still owed, and the run
//! exits with the internal-error code naming the cause and the free space. `crumb resume` goes
//! on once the cause is fixed and reaches the outcome an unfaulted run reaches.

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

/// The fault to stop with, if the writer halted.
pub(super) fn of(writer: &SharedWriter, session: &SessionDir) -> Option<StorageFault> {
    let cause = writer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .fault()?
        .to_owned();
    let free = nix::sys::statvfs::statvfs(session.path()).map_or_else(
        |e| format!("free space unknown ({e})"),
        |stats| {
            let bytes = stats
                .blocks_available()
                .saturating_mul(stats.fragment_size());
            format!("{} KiB free on the session's file system", bytes / 1024)
        },
    );
    Some(StorageFault {
        cause,
        free,
        id: session.id().to_owned(),
    })
}
