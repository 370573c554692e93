//! A session's folder and the paths inside it: `$CRUMB_HOME/projects/<project-id>/sessions/<ULID>/`.
//!
//! ```text
//! transcript.jsonl   append-only source of truth
//! meta.json          lifecycle cache (status, pid, pipeline, goal) for `crumb ls`
//! authority.json     each role's `produces`, for the `crumb event` firewall (see `authority`)
//! inbox.txt          lines from people (`crumb say`, Studio)
//! coordinator.lock   held by the one live coordinator
//! pipeline/          the frozen pipeline and templates (see `freeze`)
//! artifacts/         what the roles produce
//! prompts/<role>-<n>.md, logs/<role>-<n>.log, qa/
//! ```
//!
//! Creating a session is [`super::session`]; reading one (its table, its fold) is
//! [`super::session_read`].

use std::path::{Path, PathBuf};

use super::meta::{Meta, MetaError};

pub(crate) const TRANSCRIPT_FILE: &str = "transcript.jsonl";
pub(crate) const META_FILE: &str = "meta.json";
pub(crate) const INBOX_FILE: &str = "inbox.txt";

/// The directory of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionDir {
    path: PathBuf,
    id: String,
}

/// A folder that is not a session (it has no `meta.json`).
#[derive(Debug, thiserror::Error)]
#[error("{path} is not a session directory (no meta.json)")]
pub struct NotASession {
    pub path: String,
}

impl SessionDir {
    /// A session directory whose id is its folder name. Checks that `meta.json` exists.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, NotASession> {
        let path: PathBuf = path.into();
        if !path.join(META_FILE).is_file() {
            return Err(NotASession {
                path: path.display().to_string(),
            });
        }
        let id = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(SessionDir { path, id })
    }

    /// The folder its creator just committed (no `meta.json` check needed: it wrote one).
    pub(crate) fn created(path: PathBuf, id: String) -> Self {
        SessionDir { path, id }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session id (a ULID).
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn transcript(&self) -> PathBuf {
        self.path.join(TRANSCRIPT_FILE)
    }

    pub fn meta_path(&self) -> PathBuf {
        self.path.join(META_FILE)
    }

    pub fn inbox(&self) -> PathBuf {
        self.path.join(INBOX_FILE)
    }

    pub(crate) fn artifacts(&self) -> PathBuf {
        self.path.join("artifacts")
    }

    pub(crate) fn qa_dir(&self) -> PathBuf {
        self.path.join("qa")
    }

    /// `prompts/<role>-<n>.md`: the rendered prompt of a role's `n`-th spawn.
    pub fn prompt_path(&self, role: &str, n: u32) -> PathBuf {
        self.path
            .join("prompts")
            .join(format!("{}-{n}.md", file_safe(role)))
    }

    /// `logs/<role>-<n>.log`: stdout and stderr of a role's `n`-th spawn.
    pub fn log_path(&self, role: &str, n: u32) -> PathBuf {
        self.path
            .join("logs")
            .join(format!("{}-{n}.log", file_safe(role)))
    }

    pub fn read_meta(&self) -> Result<Meta, MetaError> {
        Meta::read(&self.meta_path())
    }

    pub(crate) fn write_meta(&self, meta: &Meta) -> Result<(), MetaError> {
        meta.write(&self.meta_path())
    }

    /// The frozen pipeline file recorded in `meta`.
    pub fn frozen_pipeline(&self, meta: &Meta) -> PathBuf {
        self.path.join(&meta.pipeline_file)
    }
}

/// A role id made safe as a file-name stem (role ids are validated already; this is defence).
fn file_safe(role: &str) -> String {
    let safe: String = role
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if safe.is_empty() { "_".into() } else { safe }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_cannot_escape_the_folder() {
        let dir = SessionDir::created(PathBuf::from("/s"), "X".into());
        assert_eq!(
            dir.prompt_path("builder", 2),
            Path::new("/s/prompts/builder-2.md")
        );
        assert_eq!(
            dir.log_path("../../etc/passwd", 1),
            Path::new("/s/logs/______etc_passwd-1.log")
        );
        assert_eq!(dir.log_path("", 1), Path::new("/s/logs/_-1.log"));
    }
}
