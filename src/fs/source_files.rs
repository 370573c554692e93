//! The real file system behind the compiler's [`SourceFiles`]: what `crumb validate`, `crumb run`,
//! freezing and the prompt renderer compile and render from.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crumb_core::pipeline::source::{Entry, ReadError, SourceFiles};

use super::bounded_read;

/// Files on disk: read through [`bounded_read`], symlinks followed as the operating system does.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsSource;

impl SourceFiles for FsSource {
    fn read(&self, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
        bounded_read::read(path, limit)
    }

    fn entry(&self, path: &Path) -> Entry {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => Entry::File,
            Ok(_) => Entry::Other,
            Err(_) => Entry::Missing,
        }
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        path.canonicalize().ok()
    }
}

/// The real files, shared as the compiler takes them.
pub fn real_files() -> Arc<dyn SourceFiles> {
    Arc::new(FsSource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crumb_core::pipeline::source::stays_inside;

    #[test]
    fn stays_inside_checks_the_written_path_and_the_real_one() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("t.j2"), "x").unwrap();
        std::fs::write(dir.path().join("own.j2"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("t.j2"), dir.path().join("link.j2"))
            .unwrap();
        let inside = |path: &Path| stays_inside(&FsSource, dir.path(), path);
        assert!(inside(&dir.path().join("own.j2")));
        assert!(inside(&dir.path().join("not-yet.j2")));
        assert!(!inside(&dir.path().join("link.j2")));
        assert!(!inside(&outside.path().join("t.j2")));
    }

    #[test]
    fn entries_follow_the_file_system() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        assert_eq!(FsSource.entry(&dir.path().join("f")), Entry::File);
        assert_eq!(FsSource.entry(dir.path()), Entry::Other);
        assert_eq!(FsSource.entry(&dir.path().join("none")), Entry::Missing);
        assert_eq!(FsSource.entry(Path::new("/dev/null")), Entry::Other);
    }
}
