//! The buffers the client has open, by path: what the compiler reads instead of the disk for
//! those files, so diagnostics follow the text being typed, not the text last saved.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crumb_core::pipeline::source::{InMemory, SourceFiles};
use lsp_types::TextDocumentContentChangeEvent;

use super::position::Lines;

/// One open buffer.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub(crate) text: String,
    pub(crate) version: i32,
    /// The file's bytes at open when they are not UTF-8. While the buffer is what they decode
    /// to, the compiler reads them instead (an editor can only send text, and the compiler should
    /// see the file as `crumb validate` does).
    raw: Option<Vec<u8>>,
}

/// Every open buffer.
#[derive(Debug, Default)]
pub(crate) struct Documents {
    open: HashMap<PathBuf, Document>,
}

impl Documents {
    pub(crate) fn open(&mut self, path: PathBuf, text: String, version: i32) {
        let raw = std::fs::read(&path)
            .ok()
            .filter(|bytes| std::str::from_utf8(bytes).is_err());
        self.open.insert(path, Document { text, version, raw });
    }

    pub(crate) fn close(&mut self, path: &Path) {
        self.open.remove(path);
    }

    pub(crate) fn get(&self, path: &Path) -> Option<&Document> {
        self.open.get(path)
    }

    /// Apply the client's edits in order: a change without a range replaces the text, a range
    /// is clamped into the text. `false` when the document is not open.
    pub(crate) fn change(
        &mut self,
        path: &Path,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> bool {
        let Some(document) = self.open.get_mut(path) else {
            return false;
        };
        for change in changes {
            match change.range {
                None => document.text = change.text,
                Some(range) => {
                    let lines = Lines::new(&document.text);
                    let start = lines.offset(range.start);
                    let end = lines.offset(range.end).max(start);
                    document.text.replace_range(start..end, &change.text);
                }
            }
        }
        document.version = version;
        true
    }

    /// The text of `path`: its buffer when open, else the file on disk as an editor would decode
    /// it (`None` if unreadable).
    pub(crate) fn text(&self, path: &Path) -> Option<String> {
        match self.open.get(path) {
            Some(document) => Some(document.text.clone()),
            None => std::fs::read(path)
                .ok()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        }
    }

    /// The files the compiler reads: the open buffers over the disk.
    pub(crate) fn files(&self) -> Arc<dyn SourceFiles> {
        self.open
            .iter()
            .fold(
                InMemory::over(crate::fs::real_files()),
                |files, (path, document)| {
                    let raw = document
                        .raw
                        .as_deref()
                        .filter(|raw| String::from_utf8_lossy(raw) == document.text);
                    files.with(path, raw.unwrap_or(document.text.as_bytes()))
                },
            )
            .shared()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    #[test]
    fn ranged_edits_apply_in_order_and_bad_ranges_are_clamped() {
        let mut documents = Documents::default();
        let path = PathBuf::from("/p/a.yaml");
        documents.open(path.clone(), "name: a\n".into(), 1);
        let edit = |range: Option<Range>, text: &str| TextDocumentContentChangeEvent {
            range,
            range_length: None,
            text: text.into(),
        };
        let at = |line, character| Position::new(line, character);
        assert!(documents.change(
            &path,
            2,
            vec![
                edit(Some(Range::new(at(0, 6), at(0, 7))), "b"),
                // Past the end of the text, backwards: an insertion at the end.
                edit(Some(Range::new(at(9, 9), at(0, 0))), "x: 1\n"),
            ],
        ));
        assert_eq!(documents.get(&path).unwrap().text, "name: b\nx: 1\n");
        assert!(!documents.change(Path::new("/p/none"), 1, vec![]));
    }
}
