//! Where sessions live: `$CRUMB_HOME` and the project a command runs for.
//!
//! The project root is the git work tree that contains the working directory (found by walking up
//! to the first `.git` entry, without running git), or the working directory itself outside git.
//! Keying sessions by the repository rather than the raw cwd means `crumb ls`, `say` and `resume`
//! find the same sessions from any subdirectory, which a hash of the working directory would not.

use std::path::{Path, PathBuf};

/// Environment variable that overrides the crumb home directory.
pub(crate) const HOME_ENV: &str = "CRUMB_HOME";

/// Length of a project id, in hex digits (64 bits: collisions are not a practical concern).
const PROJECT_ID_LEN: usize = 16;

/// A crumb home directory (`$CRUMB_HOME`, default `~/.crumb`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrumbHome {
    root: PathBuf,
}

/// The home directory could not be determined.
#[derive(Debug, thiserror::Error)]
#[error("cannot locate the crumb home: set CRUMB_HOME or HOME")]
pub struct NoHome;

impl CrumbHome {
    /// A home at an explicit directory (tests, `--home`).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        CrumbHome { root: root.into() }
    }

    /// `$CRUMB_HOME`, else `$HOME/.crumb`. Empty values count as unset.
    pub(crate) fn from_env() -> Result<Self, NoHome> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// Same as [`CrumbHome::from_env`] with an injectable environment.
    pub(crate) fn from_vars(
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, NoHome> {
        let non_empty = |name: &str| var(name).filter(|value| !value.is_empty());
        if let Some(home) = non_empty(HOME_ENV) {
            return Ok(Self::at(home));
        }
        non_empty("HOME")
            .map(|home| Self::at(PathBuf::from(home).join(".crumb")))
            .ok_or(NoHome)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<home>/projects`.
    pub(crate) fn projects_dir(&self) -> PathBuf {
        self.root.join("projects")
    }

    /// `<home>/projects/<project-id>/sessions`.
    pub fn sessions_dir(&self, project: &Project) -> PathBuf {
        self.projects_dir().join(&project.id).join("sessions")
    }
}

/// The project a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Canonical project root.
    pub root: PathBuf,
    /// First 16 hex digits of the SHA-256 of the root path.
    pub id: String,
}

impl Project {
    /// The project containing `dir`: its git work tree, else `dir` itself (both canonicalised).
    pub fn containing(dir: &Path) -> std::io::Result<Self> {
        let dir = dir.canonicalize()?;
        let root = git_toplevel(&dir).unwrap_or(dir);
        Ok(Self::from_root(root))
    }

    /// The project of the current working directory.
    pub(crate) fn current() -> std::io::Result<Self> {
        Self::containing(&std::env::current_dir()?)
    }

    /// A project with an already-canonical root.
    pub fn from_root(root: PathBuf) -> Self {
        let id = project_id(&root);
        Project { root, id }
    }
}

/// The stable short id of a project root.
pub(crate) fn project_id(root: &Path) -> String {
    let mut id = crumb_core::digest::sha256_hex(root.as_os_str().as_encoded_bytes());
    id.truncate(PROJECT_ID_LEN);
    id
}

/// The nearest ancestor of `dir` (itself included) holding a `.git` directory or file.
fn git_toplevel(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|candidate| candidate.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn crumb_home_wins_over_home() {
        let vars = |name: &str| match name {
            "CRUMB_HOME" => Some(OsString::from("/x/crumb")),
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        assert_eq!(
            CrumbHome::from_vars(vars).unwrap().root(),
            Path::new("/x/crumb")
        );
    }

    #[test]
    fn empty_crumb_home_falls_back_to_home() {
        let vars = |name: &str| match name {
            "CRUMB_HOME" => Some(OsString::new()),
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        assert_eq!(
            CrumbHome::from_vars(vars).unwrap().root(),
            Path::new("/home/u/.crumb")
        );
        assert!(CrumbHome::from_vars(|_| None).is_err());
    }

    #[test]
    fn project_id_is_short_stable_hex() {
        let id = project_id(Path::new("/work/main"));
        assert_eq!(id.len(), 16);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id, project_id(Path::new("/work/main")));
        assert_ne!(id, project_id(Path::new("/work/other")));
    }

    #[test]
    fn subdirectories_of_a_git_tree_share_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".git")).unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        let top = Project::containing(tmp.path()).unwrap();
        let nested = Project::containing(&tmp.path().join("a/b")).unwrap();
        assert_eq!(top, nested);
        assert_eq!(top.root, tmp.path().canonicalize().unwrap());
    }
}
