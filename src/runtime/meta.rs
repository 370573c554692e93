//! `meta.json`: a small mutable cache of a session's lifecycle, so `crumb ls` can list hundreds of
//! sessions without reading their transcripts. The transcript stays the source of truth; meta is
//! rewritten atomically (temp file + rename), so a reader never sees half a file.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Current `meta.json` format.
pub(crate) const META_SCHEMA_VERSION: u32 = 1;

use super::limits::MAX_META_BYTES;

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// A coordinator is (or was, if its lock is free) driving the session.
    Running,
    /// Waiting for a person (`/approve`, `/veto`); resumable.
    Awaiting,
    /// Finished with a `done` event.
    Done,
    /// The coordinator stopped on an internal error; resumable.
    Error,
}

impl SessionStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Awaiting => "awaiting",
            SessionStatus::Done => "done",
            SessionStatus::Error => "error",
        }
    }
}

/// The contents of `meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub schema_version: u32,
    pub session_id: String,
    pub status: SessionStatus,
    /// Process id of the coordinator that last wrote `running`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The pipeline's `name`.
    pub pipeline: String,
    /// The frozen pipeline file, relative to the session directory.
    pub pipeline_file: String,
    /// Content hash of the frozen pipeline and templates (`sha256:<hex>`).
    pub pipeline_hash: String,
    /// Role ids of the pipeline, in declaration order (inbox validation without recompiling).
    #[serde(default)]
    pub roles: Vec<String>,
    /// RFC 3339 UTC creation time.
    pub created: String,
    /// RFC 3339 UTC time of the last status change.
    pub updated: String,
    /// The pitch / goal the session was started with.
    pub goal: String,
}

/// `meta.json` could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is larger than {MAX_META_BYTES} bytes")]
    TooLarge { path: String },
    #[error("{path} is not a valid meta.json: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

impl Meta {
    /// Read and parse `path`.
    pub fn read(path: &Path) -> Result<Meta, MetaError> {
        let shown = || path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| MetaError::Read {
            path: shown(),
            source,
        })?;
        let len = file
            .metadata()
            .map_err(|source| MetaError::Read {
                path: shown(),
                source,
            })?
            .len();
        if len > MAX_META_BYTES {
            return Err(MetaError::TooLarge { path: shown() });
        }
        let text = std::fs::read(path).map_err(|source| MetaError::Read {
            path: shown(),
            source,
        })?;
        serde_json::from_slice(&text).map_err(|source| MetaError::Parse {
            path: shown(),
            source,
        })
    }

    /// Write to `path` atomically: a sibling temp file, fsync'd, then renamed over the target.
    pub(crate) fn write(&self, path: &Path) -> Result<(), MetaError> {
        let shown = || path.display().to_string();
        let err = |source| MetaError::Write {
            path: shown(),
            source,
        };
        let mut text = serde_json::to_vec_pretty(self).expect("meta serialises");
        text.push(b'\n');
        write_atomically(path, &text).map_err(err)
    }

    /// Set the status (and `pid` when running), stamping `updated`.
    pub(crate) fn set_status(&mut self, status: SessionStatus, pid: Option<u32>) {
        self.status = status;
        self.pid = pid;
        self.updated = now_rfc3339();
    }
}

/// Write `bytes` to `path` through a temporary sibling (`<name>.tmp.<pid>`, removed if anything
/// fails) renamed over it, so a reader (a concurrent `crumb ls`, `crumb event`, `crumb status`)
/// never sees half a file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!("{name}.tmp.{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The current time as RFC 3339 UTC with millisecond precision (the transcript's format).
pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Meta {
        Meta {
            schema_version: META_SCHEMA_VERSION,
            session_id: "01JABCDEFGHJKMNPQRSTVWXYZ0".into(),
            status: SessionStatus::Running,
            pid: Some(42),
            pipeline: "casual".into(),
            pipeline_file: "pipeline/pipelines/casual.yaml".into(),
            pipeline_hash: "sha256:00".into(),
            roles: vec!["planner-lead".into()],
            created: "2026-11-30T09:00:00.000Z".into(),
            updated: "2026-11-30T09:00:00.000Z".into(),
            goal: "match-3".into(),
        }
    }

    #[test]
    fn write_then_read_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.json");
        let mut meta = sample();
        meta.write(&path).unwrap();
        assert_eq!(Meta::read(&path).unwrap(), meta);
        meta.set_status(SessionStatus::Done, None);
        meta.write(&path).unwrap();
        let back = Meta::read(&path).unwrap();
        assert_eq!(back.status, SessionStatus::Done);
        assert_eq!(back.pid, None);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left behind"
        );
    }

    #[test]
    fn garbage_and_oversized_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.json");
        std::fs::write(&path, b"{\"status\": 7").unwrap();
        assert!(matches!(Meta::read(&path), Err(MetaError::Parse { .. })));
        std::fs::write(
            &path,
            vec![b' '; usize::try_from(MAX_META_BYTES).unwrap() + 1],
        )
        .unwrap();
        assert!(matches!(Meta::read(&path), Err(MetaError::TooLarge { .. })));
        assert!(matches!(
            Meta::read(&dir.path().join("none")),
            Err(MetaError::Read { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn reading_any_bytes_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("meta.json");
            std::fs::write(&path, &bytes).unwrap();
            let _ = Meta::read(&path);
        }
    }
}
