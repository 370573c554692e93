//! Reading the inbox incrementally: the whole lines appended after a byte offset.
//!
//! Lines are cut by the transcript's line framer ([`crate::transcript::framer`]) with the inbox's
//! own limit. A last line without its newline is still being written, so it is left for the next
//! read and the returned offset stops before it. Lines longer than [`MAX_LINE_BYTES`] are skipped
//! whole (reported as [`InboxLine::too_long`]) so one hostile line can neither exhaust memory nor
//! stall the reader forever.

use std::io::{Seek, SeekFrom};
use std::path::Path;

use super::command::MAX_LINE_BYTES;
use crate::transcript::framer::{Frame, LineFramer};

/// One complete inbox line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxLine {
    /// The line without its newline (lossily decoded; empty when `too_long`).
    pub text: String,
    /// Byte offset of the line's first byte.
    pub start: u64,
    /// Byte offset just past its newline: the consumed offset once this line is handled.
    pub end: u64,
    /// The line exceeded [`MAX_LINE_BYTES`]; its content was discarded.
    pub too_long: bool,
}

/// The inbox could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read inbox {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The file is shorter than what was already consumed: someone truncated or replaced it.
    #[error("inbox {path} shrank to {len} bytes below the consumed offset {offset}")]
    Shrunk { path: String, len: u64, offset: u64 },
}

/// The complete lines of `path` after byte `offset`. A missing file has no lines.
pub fn read_after(path: &Path, offset: u64) -> Result<Vec<InboxLine>, ReadError> {
    let io = |source| ReadError::Io {
        path: path.display().to_string(),
        source,
    };
    // A FIFO or device in the inbox's place would block or never end: refused before reading.
    let mut file = match crate::fs::bounded_read::open_regular(path) {
        Ok(file) => file,
        Err(err) if err.is_not_found() => return Ok(Vec::new()),
        Err(crumb_core::pipeline::source::ReadError::Io(err)) => return Err(io(err)),
        Err(other) => return Err(io(std::io::Error::other(other.to_string()))),
    };
    let len = file.metadata().map_err(io)?.len();
    if len < offset {
        return Err(ReadError::Shrunk {
            path: path.display().to_string(),
            len,
            offset,
        });
    }
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut framer = LineFramer::resume(offset, 0).with_max_line(MAX_LINE_BYTES);
    let mut lines = Vec::new();
    while let Some(frames) = framer.read(&mut file).map_err(io)? {
        lines.extend(
            frames.iter().map(|frame| match frame {
                Frame::Line { offset, bytes, .. } => InboxLine {
                    text: String::from_utf8_lossy(bytes.strip_suffix(b"\r").unwrap_or(bytes))
                        .into_owned(),
                    start: offset,
                    end: offset + bytes.len() as u64 + 1,
                    too_long: false,
                },
                Frame::TooLong { offset, len, .. } => InboxLine {
                    text: String::new(),
                    start: offset,
                    end: offset + len,
                    too_long: true,
                },
            }),
        );
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn inbox(content: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.txt");
        std::fs::write(&path, content).unwrap();
        (dir, path)
    }

    #[test]
    fn whole_lines_only_and_offsets_chain() {
        let (_dir, path) = inbox(b"/pause\n@builder hi\r\n/res");
        let lines = read_after(&path, 0).unwrap();
        let texts: Vec<&str> = lines.iter().map(|line| line.text.as_str()).collect();
        assert_eq!(texts, ["/pause", "@builder hi"]);
        assert_eq!((lines[0].start, lines[0].end), (0, 7));
        assert_eq!((lines[1].start, lines[1].end), (7, 20));
        assert!(
            read_after(&path, 20).unwrap().is_empty(),
            "partial line waits"
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"ume\n")
            .unwrap();
        let next = read_after(&path, 20).unwrap();
        assert_eq!(
            next,
            [InboxLine {
                text: "/resume".into(),
                start: 20,
                end: 28,
                too_long: false
            }]
        );
        assert!(read_after(&path, 28).unwrap().is_empty());
    }

    #[test]
    fn missing_file_is_empty_and_shrinking_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_after(&dir.path().join("none"), 0).unwrap().is_empty());
        let (_dir, path) = inbox(b"a\n");
        assert!(matches!(
            read_after(&path, 10),
            Err(ReadError::Shrunk {
                len: 2,
                offset: 10,
                ..
            })
        ));
    }

    #[test]
    fn oversized_lines_are_skipped_whole() {
        let mut content = vec![b'x'; MAX_LINE_BYTES * 3];
        content.extend_from_slice(b"\n/approve\n");
        let (_dir, path) = inbox(&content);
        let lines = read_after(&path, 0).unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].too_long && lines[0].text.is_empty());
        assert_eq!(lines[0].end, (MAX_LINE_BYTES * 3 + 1) as u64);
        assert_eq!(lines[1].text, "/approve");
        // Oversized and unterminated: nothing consumed yet.
        let (_dir, path) = inbox(&vec![b'y'; MAX_LINE_BYTES * 2]);
        assert!(read_after(&path, 0).unwrap().is_empty());
    }

    #[test]
    fn invalid_utf8_is_decoded_lossily() {
        let (_dir, path) = inbox(b"\xff\xfe hi\n");
        assert_eq!(read_after(&path, 0).unwrap()[0].text, "\u{fffd}\u{fffd} hi");
    }

    proptest::proptest! {
        #[test]
        fn lines_tile_the_consumed_prefix(content in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let (_dir, path) = inbox(&content);
            let lines = read_after(&path, 0).unwrap();
            let mut expected_start = 0;
            for line in &lines {
                proptest::prop_assert_eq!(line.start, expected_start);
                proptest::prop_assert_eq!(content[usize::try_from(line.end).unwrap() - 1], b'\n');
                expected_start = line.end;
            }
            // Whatever is left has no newline.
            let rest = &content[usize::try_from(expected_start).unwrap()..];
            proptest::prop_assert!(!rest.contains(&b'\n'));
        }
    }
}
