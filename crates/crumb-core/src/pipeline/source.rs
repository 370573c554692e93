//! Where the compiler's files come from. The core never touches the file system: every read,
//! "what is at this path" and symlink resolution of pipelines, fragments, presets and templates
//! goes through [`SourceFiles`]. The `crumb` crate passes the real file system; tests pass
//! [`InMemory`] files, and an editor can pass its unsaved buffers over the real files the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::pipeline::lexical_path::normalize;

/// The file operations compiling a pipeline needs. `Send + Sync` because the prompt renderer's
/// template loader holds one.
pub trait SourceFiles: Send + Sync {
    /// The bytes of the regular file at `path`, at most `limit` of them: anything else (a FIFO,
    /// a device, a folder) is refused before it is read.
    fn read(&self, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError>;

    /// What is at `path`, following symlinks.
    fn entry(&self, path: &Path) -> Entry;

    /// The real path of `path` (absolute, symlinks resolved), or `None` when nothing is there.
    fn canonicalize(&self, path: &Path) -> Option<PathBuf>;
}

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a regular file (a {0})")]
    NotRegular(&'static str),
    #[error("file is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl ReadError {
    /// Whether the file is simply absent (callers that treat a missing file as empty).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io(err) if err.kind() == std::io::ErrorKind::NotFound)
    }
}

/// What is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A regular file.
    File,
    /// Something that is not a regular file (a folder, a FIFO, a device).
    Other,
    /// Nothing.
    Missing,
}

/// Whether `path` (absolute, already normalised) is under `root`, both as written and, when it
/// exists, once symlinks are resolved: how the template checks, the prompt renderer and
/// `include:` keep what they read inside the project.
pub fn stays_inside(files: &dyn SourceFiles, root: &Path, path: &Path) -> bool {
    if !path.starts_with(root) {
        return false;
    }
    let real_root = files
        .canonicalize(root)
        .unwrap_or_else(|| root.to_path_buf());
    files
        .canonicalize(path)
        .is_none_or(|real| real.starts_with(&real_root))
}

/// Files held in memory, over an optional base: a path given here has this text whatever the
/// base holds (an editor's unsaved buffer), every other path is the base's (or missing).
/// Paths are taken as written: give absolute paths to resolve templates against.
#[derive(Default, Clone)]
pub struct InMemory {
    files: BTreeMap<PathBuf, Vec<u8>>,
    base: Option<Arc<dyn SourceFiles>>,
}

impl InMemory {
    /// No files at all except the ones added.
    pub fn new() -> Self {
        InMemory::default()
    }

    /// The files of `base`, except the ones added.
    pub fn over(base: Arc<dyn SourceFiles>) -> Self {
        InMemory {
            files: BTreeMap::new(),
            base: Some(base),
        }
    }

    /// These files, shared as the compiler takes them.
    pub fn shared(self) -> Arc<dyn SourceFiles> {
        Arc::new(self)
    }

    /// `path` holds `text` from now on.
    #[must_use]
    pub fn with(mut self, path: impl AsRef<Path>, text: impl Into<Vec<u8>>) -> Self {
        self.files.insert(normalize(path.as_ref()), text.into());
        self
    }

    /// Whether `path` is a folder some file added here is in.
    fn holds_folder(&self, path: &Path) -> bool {
        let path = normalize(path);
        self.files
            .keys()
            .any(|file| file != &path && file.starts_with(&path))
    }
}

impl SourceFiles for InMemory {
    fn read(&self, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
        match self.files.get(&normalize(path)) {
            Some(bytes) if bytes.len() as u64 > limit => Err(ReadError::TooLarge { limit }),
            Some(bytes) => Ok(bytes.clone()),
            None if self.holds_folder(path) => Err(ReadError::NotRegular("directory")),
            None => match &self.base {
                Some(base) => base.read(path, limit),
                None => Err(std::io::Error::from(std::io::ErrorKind::NotFound).into()),
            },
        }
    }

    fn entry(&self, path: &Path) -> Entry {
        if self.files.contains_key(&normalize(path)) {
            Entry::File
        } else if self.holds_folder(path) {
            Entry::Other
        } else {
            self.base
                .as_ref()
                .map_or(Entry::Missing, |base| base.entry(path))
        }
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        let written = normalize(path);
        if self.files.contains_key(&written) || self.holds_folder(&written) {
            return Some(written);
        }
        self.base.as_ref().and_then(|base| base.canonicalize(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_serves_its_files_and_its_folders_and_leaves_the_rest_to_the_base() {
        let base: Arc<dyn SourceFiles> = Arc::new(InMemory::new().with("/p/base.j2", "base"));
        let files = InMemory::over(base)
            .with("/p/t/a.j2", "unsaved")
            .with("/p/base.j2", "edited");
        assert_eq!(
            files.read(Path::new("/p/t/./a.j2"), 64).unwrap(),
            b"unsaved"
        );
        assert_eq!(files.read(Path::new("/p/base.j2"), 64).unwrap(), b"edited");
        assert_eq!(files.entry(Path::new("/p/t")), Entry::Other);
        assert_eq!(files.entry(Path::new("/p/none")), Entry::Missing);
        assert!(
            files
                .read(Path::new("/p/none"), 64)
                .unwrap_err()
                .is_not_found()
        );
        assert!(matches!(
            files.read(Path::new("/p/t/a.j2"), 3),
            Err(ReadError::TooLarge { limit: 3 })
        ));
        assert!(stays_inside(
            &files,
            Path::new("/p"),
            Path::new("/p/t/a.j2")
        ));
        assert!(!stays_inside(
            &files,
            Path::new("/p/t"),
            Path::new("/p/base.j2")
        ));
    }
}
