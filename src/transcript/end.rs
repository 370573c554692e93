//! Whether a transcript's last line is `session.end`, read from the end of the file.
//!
//! `crumb ls`, `crumb run`'s pick-up, batch and Studio ask this of many sessions at once, so it
//! reads only the file's last few KiB instead of framing the whole transcript; the last line is
//! decoded like any other (a torn or foreign last line is "not ended").

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::Kind;

/// Whether the transcript at `path` ends in `session.end`: the session is over, whatever
/// `meta.json` says (a runner can die after the transcript's last line, before meta's update).
/// Reads only the file's last few KiB.
pub(crate) fn has_ended(path: &Path) -> bool {
    const TAIL: u64 = 4096;
    let Ok(mut file) = crate::fs::bounded_read::open_regular(path) else {
        return false;
    };
    let Ok(len) = file.seek(SeekFrom::End(0)) else {
        return false;
    };
    let mut tail = Vec::new();
    if file
        .seek(SeekFrom::Start(len.saturating_sub(TAIL)))
        .is_err()
        || file.take(TAIL).read_to_end(&mut tail).is_err()
    {
        return false;
    }
    let last = tail
        .split(|&b| b == b'\n')
        .rfind(|line| !line.trim_ascii().is_empty());
    last.and_then(|line| serde_json::from_slice::<serde_json::Value>(line.trim_ascii()).ok())
        .is_some_and(|event| {
            event.get("kind").and_then(serde_json::Value::as_str) == Some(Kind::SessionEnd.as_str())
        })
}
