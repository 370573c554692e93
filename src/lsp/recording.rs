//! The files one compile read, so an edit to any of them (a template, an `include:` fragment)
//! re-diagnoses the pipelines that read it. Reads that failed count too: creating a missing
//! template clears its pipeline's error.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crumb_core::pipeline::source::{Entry, ReadError, SourceFiles};

use super::uri::normalize;

/// `base`, remembering every path asked for.
pub(crate) struct Recording {
    base: Arc<dyn SourceFiles>,
    asked: Mutex<BTreeSet<PathBuf>>,
}

impl Recording {
    pub(crate) fn over(base: Arc<dyn SourceFiles>) -> Arc<Recording> {
        Arc::new(Recording {
            base,
            asked: Mutex::new(BTreeSet::new()),
        })
    }

    /// The paths asked for so far, lexically normalised.
    pub(crate) fn paths(&self) -> BTreeSet<PathBuf> {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn note(&self, path: &Path) {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(normalize(path));
    }
}

impl SourceFiles for Recording {
    fn read(&self, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
        self.note(path);
        self.base.read(path, limit)
    }

    fn entry(&self, path: &Path) -> Entry {
        self.note(path);
        self.base.entry(path)
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        self.base.canonicalize(path)
    }
}
