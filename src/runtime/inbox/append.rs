//! Appending one line to an inbox, the way `crumb say` and Studio do.
//!
//! The line and its newline go out in one `write` on an `O_APPEND` descriptor while an exclusive
//! `flock` is held, so concurrent writers never interleave and the reader never sees half a line
//! followed by another writer's bytes.

use std::io::Write;
use std::path::Path;

use super::command::MAX_LINE_BYTES;

/// A line could not be appended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppendError {
    #[error("an inbox line cannot contain a line break")]
    MultiLine,
    #[error("line is {len} bytes; the limit is {MAX_LINE_BYTES}")]
    TooLong { len: usize },
    #[error("cannot append to {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// Append `line` (without a newline of its own) to the inbox at `path`, creating it if needed.
/// Returns the byte offset just past the appended newline.
pub(crate) fn append_line(path: &Path, line: &str) -> Result<u64, AppendError> {
    if line.contains(['\n', '\r']) {
        return Err(AppendError::MultiLine);
    }
    if line.len() > MAX_LINE_BYTES {
        return Err(AppendError::TooLong { len: line.len() });
    }
    let io = |source| AppendError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    file.lock().map_err(io)?;
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let written = file
        .write_all(&bytes)
        .and_then(|()| file.metadata())
        .map(|meta| meta.len());
    let _ = file.unlock();
    written.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_whole_lines_and_rejects_breaks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.txt");
        assert_eq!(append_line(&path, "/pause").unwrap(), 7);
        assert_eq!(append_line(&path, "@builder hi").unwrap(), 19);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "/pause\n@builder hi\n"
        );
        assert!(matches!(
            append_line(&path, "a\nb"),
            Err(AppendError::MultiLine)
        ));
        assert!(matches!(
            append_line(&path, &"x".repeat(MAX_LINE_BYTES + 1)),
            Err(AppendError::TooLong { .. })
        ));
    }

    #[test]
    fn concurrent_writers_never_interleave() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.txt");
        std::thread::scope(|scope| {
            for writer in 0..8 {
                let path = &path;
                scope.spawn(move || {
                    for n in 0..50 {
                        let line = format!("@builder {writer}-{n} {}", "z".repeat(500));
                        append_line(path, &line).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 400);
        assert!(
            text.lines()
                .all(|line| line.starts_with("@builder ") && line.ends_with(&"z".repeat(500)))
        );
    }
}
