//! A version's `manifest.json`: every file of the frozen tree (path under `artifacts/`, sha256,
//! size), the point it was taken at, the verdict and scores that judged that build, and the
//! pipeline's hash — what `copy-artifacts` verifies a copy against.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file inside a version folder.
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
/// The folder holding the version's files, laid out as `artifacts/` was.
pub(crate) const FILES_DIR: &str = "files";

/// One released file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ManifestFile {
    /// Relative to the tree root (`game/index.html` for `artifacts/game/index.html`).
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

/// The verdict that judged the released build, corrected as the engine corrected it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Judged {
    pub event_id: String,
    pub verdict: String,
    pub severity: String,
    pub aggregate: f64,
    /// Rubric dimension id → corrected score.
    pub scores: indexmap::IndexMap<String, f64>,
}

/// A named, frozen tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub name: String,
    pub session: String,
    /// The event the tree is as of.
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub created: String,
    pub pipeline_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judged>,
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    pub(crate) fn read(version: &Path) -> Result<Self, String> {
        let path = version.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Where file `path` of the version at `version` lives.
    pub(crate) fn file(version: &Path, path: &str) -> PathBuf {
        version.join(FILES_DIR).join(path)
    }
}
