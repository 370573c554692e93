//! Keeping an untrusted path inside its folder: QA's artifacts, the Studio's session files and
//! forks resolve through here (the compiler's template checks ask the same of
//! [`crumb_core::pipeline::source::stays_inside`] over [`super::source_files::FsSource`]).
//!
//! A path from a pipeline, an agent or a browser is untrusted: `..`, an absolute path or a symlink
//! pointing outside would read (or run in) files that were never meant to be reached. Such a path is
//! refused, never followed.
//!
//! A hard link is refused too: a file inside the folder with more than one link may be the same
//! file as one outside it (`ln ~/.ssh/id_ed25519 artifacts/x`), and its metadata cannot say where
//! the other names are. An agent has no reason to hard-link its own work, so any non-directory
//! with more than one link is treated as leading out (artifacts are taken by content, not by link).

use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Escape {
    #[error("path `{0}` is absolute; paths are relative to the artifacts folder")]
    Absolute(String),
    #[error("path `{0}` climbs out of the artifacts folder with `..`")]
    Parent(String),
    #[error("path `{0}` is empty or contains a NUL byte")]
    Malformed(String),
    #[error("path `{0}` resolves outside the artifacts folder (symlink)")]
    Symlink(String),
    #[error("path `{0}` is a hard link (more than one name for the file); copy the file instead")]
    HardLink(String),
}

impl Escape {
    /// Stable finding code, the same for every way out.
    pub(crate) const CODE: &'static str = "path_escape";
}

/// Join `relative` onto `root` lexically, refusing absolute paths and `..`.
pub(crate) fn join_inside(root: &Path, relative: &str) -> Result<PathBuf, Escape> {
    let shown: String = relative.chars().take(200).collect();
    if relative.is_empty() || relative.contains('\0') {
        return Err(Escape::Malformed(shown));
    }
    let rel = Path::new(relative);
    let mut out = root.to_path_buf();
    for part in rel.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err(Escape::Parent(shown)),
            Component::RootDir | Component::Prefix(_) => return Err(Escape::Absolute(shown)),
        }
    }
    Ok(out)
}

/// [`join_inside`], then, if the path exists, check that its real location is still under the real
/// root (so a symlink cannot lead out). A path that does not exist is returned as joined.
pub(crate) fn resolve_inside(root: &Path, relative: &str) -> Result<PathBuf, Escape> {
    let joined = join_inside(root, relative)?;
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match real_location(&real_root, &joined) {
        Location::Outside => Err(Escape::Symlink(relative.chars().take(200).collect())),
        Location::Inside(real) if hard_linked(&real) => {
            Err(Escape::HardLink(relative.chars().take(200).collect()))
        }
        Location::Inside(_) | Location::Missing => Ok(joined),
    }
}

/// Whether `path` is a non-directory with more than one hard link (see the module docs).
pub(crate) fn hard_linked(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|meta| !meta.is_dir() && meta.nlink() > 1)
}

/// Where a path really is once symlinks are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// It exists, and its canonical path (held here) is under the root.
    Inside(PathBuf),
    /// It exists, but resolves outside the root.
    Outside,
    /// Nothing is there (or it cannot be resolved).
    Missing,
}

/// The one symlink check: where `path` really is relative to `real_root` (already canonical).
pub(crate) fn real_location(real_root: &Path, path: &Path) -> Location {
    match path.canonicalize() {
        Ok(real) if real.starts_with(real_root) => Location::Inside(real),
        Ok(_) => Location::Outside,
        Err(_) => Location::Missing,
    }
}

/// Whether `path` (already under `root`) really lives under `root` after resolving symlinks.
pub(crate) fn really_inside(real_root: &Path, path: &Path) -> bool {
    matches!(real_location(real_root, path), Location::Inside(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_parent_and_absolute() {
        let root = Path::new("/tmp/a");
        assert!(matches!(join_inside(root, "../x"), Err(Escape::Parent(_))));
        assert!(matches!(
            join_inside(root, "game/../../x"),
            Err(Escape::Parent(_))
        ));
        assert!(matches!(
            join_inside(root, "/etc/passwd"),
            Err(Escape::Absolute(_))
        ));
        assert!(matches!(join_inside(root, ""), Err(Escape::Malformed(_))));
        assert_eq!(
            join_inside(root, "./game/index.html").unwrap(),
            Path::new("/tmp/a/game/index.html")
        );
    }

    #[test]
    fn refuses_symlink_out() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        assert!(matches!(
            resolve_inside(dir.path(), "link"),
            Err(Escape::Symlink(_))
        ));
    }

    #[test]
    fn refuses_a_hard_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::fs::write(dir.path().join("own"), "x").unwrap();
        std::fs::hard_link(outside.path().join("secret"), dir.path().join("link")).unwrap();
        assert!(matches!(
            resolve_inside(dir.path(), "link"),
            Err(Escape::HardLink(_))
        ));
        assert!(resolve_inside(dir.path(), "own").is_ok());
        assert!(
            resolve_inside(dir.path(), ".").is_ok(),
            "folders have many links"
        );
    }

    proptest::proptest! {
        #[test]
        fn never_leaves_root(rel in "\\PC{0,64}") {
            let root = Path::new("/srv/artifacts");
            if let Ok(p) = join_inside(root, &rel) {
                proptest::prop_assert!(p.starts_with(root));
                proptest::prop_assert!(!p.components().any(|c| c == Component::ParentDir));
            }
        }
    }
}
