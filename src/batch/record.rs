//! A batch's folder under the crumb home (`batches/<id>/`): what the batch is (`batch.json`) and,
//! per pitch, the session that runs it and how its `crumb run` exited (`pitches/<i>.json`, each
//! written whole by temp file + rename). Running the same batch again finds this folder, so each
//! pitch's session is found again and none is run twice.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::plan::Pitch;

/// What `batch.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BatchFile {
    pub id: String,
    pub pipeline: PathBuf,
    pub pitches: Vec<Pitch>,
}

/// What one pitch's record holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PitchRecord {
    pub session: Option<String>,
    /// The child `crumb run`/`crumb resume` driving it, while it runs (a batch killed before it
    /// exited leaves it recorded, and the next run of the batch stops it before taking over).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The exit code of the `crumb run` that drove it last, once it exited.
    pub exit_code: Option<u8>,
}

/// A batch folder.
#[derive(Debug, Clone)]
pub(crate) struct BatchDir {
    root: PathBuf,
}

/// The id of a batch: the same pipeline file and the same pitches are the same batch.
pub(crate) fn batch_id(pipeline: &Path, pitches: &[Pitch]) -> String {
    let key = serde_json::json!({ "pipeline": pipeline, "pitches": pitches }).to_string();
    crumb_core::digest::sha256_hex(key.as_bytes())[..16].to_owned()
}

impl BatchDir {
    /// Open (creating if needed) the folder of `batch` under `home`.
    pub(crate) fn create(home: &Path, batch: &BatchFile) -> std::io::Result<BatchDir> {
        let root = home.join("batches").join(&batch.id);
        std::fs::create_dir_all(root.join("pitches"))?;
        let dir = BatchDir { root };
        let text = serde_json::to_vec_pretty(batch).map_err(std::io::Error::other)?;
        write_whole(&dir.root.join("batch.json"), &text)?;
        Ok(dir)
    }

    /// An existing batch folder.
    pub(crate) fn open(root: PathBuf) -> std::io::Result<(BatchDir, BatchFile)> {
        let bytes = crate::fs::bounded_read::read(&root.join("batch.json"), 16 << 20)
            .map_err(std::io::Error::other)?;
        let file = serde_json::from_slice(&bytes).map_err(std::io::Error::other)?;
        Ok((BatchDir { root }, file))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.root
    }

    fn pitch_path(&self, index: usize) -> PathBuf {
        self.root.join("pitches").join(format!("{index}.json"))
    }

    /// The record of pitch `index` (empty when none was written).
    pub(crate) fn pitch(&self, index: usize) -> PitchRecord {
        crate::fs::bounded_read::read(&self.pitch_path(index), 1 << 16)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    pub(crate) fn set_pitch(&self, index: usize, record: &PitchRecord) -> std::io::Result<()> {
        let text = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        write_whole(&self.pitch_path(index), &text)
    }
}

/// Write `bytes` to `path` by temp file + rename, so a reader never sees half of it.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
