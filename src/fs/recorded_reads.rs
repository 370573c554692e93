//! The real files, remembering which ones the compiler read: freezing a session copies what the
//! compile that admitted the pipeline actually read (the pipeline, its `include:`/`extends:`
//! fragments, its templates) instead of parsing the YAML again to find them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crumb_core::pipeline::source::{Entry, ReadError, SourceFiles};

use super::source_files::FsSource;

/// [`FsSource`] that records the real path of every file it read whole.
#[derive(Debug, Default)]
pub(crate) struct RecordedReads {
    read: Mutex<Vec<PathBuf>>,
}

impl RecordedReads {
    pub(crate) fn shared() -> Arc<RecordedReads> {
        Arc::new(RecordedReads::default())
    }

    /// The real paths read so far, sorted, each once.
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        let mut paths = self
            .read
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        paths.sort();
        paths.dedup();
        paths
    }
}

impl SourceFiles for RecordedReads {
    fn read(&self, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
        let bytes = FsSource.read(path, limit)?;
        if let Some(real) = FsSource.canonicalize(path) {
            self.read
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(real);
        }
        Ok(bytes)
    }

    fn entry(&self, path: &Path) -> Entry {
        FsSource.entry(path)
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        FsSource.canonicalize(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_read_are_recorded_by_their_real_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "x").unwrap();
        std::fs::write(dir.path().join("b.j2"), "y").unwrap();
        std::os::unix::fs::symlink(dir.path().join("a.yaml"), dir.path().join("link.yaml"))
            .unwrap();
        let files = RecordedReads::default();
        files.read(&dir.path().join("link.yaml"), 10).unwrap();
        files.read(&dir.path().join("a.yaml"), 10).unwrap();
        assert_eq!(files.entry(&dir.path().join("b.j2")), Entry::File);
        assert!(files.read(&dir.path().join("missing"), 10).is_err());
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(files.paths(), vec![real.join("a.yaml")]);
    }
}
