//! Whether a session's file system can be trusted with writes, asked after a turn or a QA run
//! failed: on a full disk its own writes may have failed the same way, and the failure is then
//! the machine's (the turn is owed), not the turn's.

use std::path::Path;

use crate::transcript::writer::MAX_LINE_BYTES;

/// Why writes to the session in `dir` cannot be relied on, if they cannot: a probe as large as
/// the largest line an append may need cannot be written (a full disk, a quota, a file size
/// limit). Run only after a failed turn, whose own writes may have failed the same way.
pub(crate) fn storage_short(dir: &Path) -> Option<String> {
    use std::io::Write as _;
    let probe = dir.join(format!(".storage-probe.{}", std::process::id()));
    let chunk = vec![0u8; 64 * 1024];
    let written = std::fs::File::create(&probe).and_then(|mut file| {
        for _ in 0..MAX_LINE_BYTES / chunk.len() {
            file.write_all(&chunk)?;
        }
        file.sync_data()
    });
    let _ = std::fs::remove_file(&probe);
    if let Err(e) = written {
        return Some(format!(
            "the session cannot take a {} KiB write ({e})",
            MAX_LINE_BYTES / 1024
        ));
    }
    // Files freed as the turn ended (its capability, its group record) let the probe through on
    // a file system out of inodes, where the agent's own files could not be created.
    let stats = nix::sys::statvfs::statvfs(dir).ok()?;
    (stats.files() > 0 && stats.files_available() < MIN_FREE_INODES).then(|| {
        format!(
            "the session's file system has {} inodes free",
            stats.files_available()
        )
    })
}

/// Fewer free inodes than this and a turn cannot be trusted to have created its files (a turn
/// makes a handful: prompt, log, capability, the agent's artifacts).
const MIN_FREE_INODES: u64 = 64;
