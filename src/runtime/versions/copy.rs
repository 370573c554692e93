//! `crumb copy-artifacts`: a version's (or a session point's) whole tree copied into a folder,
//! every file checked against its recorded sha256 before anything is written, nothing
//! overwritten unless forced, each file written through a temporary sibling renamed into place.

use std::path::{Path, PathBuf};

use super::manifest::{Manifest, ManifestFile};
use super::point::{ARTIFACTS_PREFIX, Point};
use crate::runtime::artifact_store::tree::verified;

/// Where the files come from.
pub(crate) enum Source<'a> {
    /// A version folder (its manifest lists the files).
    Version(&'a Path),
    /// A session folder and one of its points.
    Session(&'a Path, &'a Point),
}

/// One file copied (or, in a dry run, to be copied).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Copied {
    pub path: String,
    pub sha256: String,
    pub size: u64,
    /// A file was there and `--force` replaced it.
    pub replaced: bool,
}

/// The files and their verified bytes.
fn gather(source: &Source<'_>) -> Result<Vec<(ManifestFile, Vec<u8>)>, String> {
    let listed: Vec<(String, String, PathBuf)> = match source {
        Source::Version(dir) => Manifest::read(dir)?
            .files
            .into_iter()
            .map(|f| (f.path.clone(), f.sha256, Manifest::file(dir, &f.path)))
            .collect(),
        Source::Session(session, point) => point
            .tree
            .iter()
            .map(|(path, sha)| (path.clone(), sha.clone(), session.to_path_buf()))
            .collect(),
    };
    let mut out = Vec::new();
    for (path, sha, from) in listed {
        let bytes = match source {
            Source::Version(_) => std::fs::read(&from)
                .map_err(|e| format!("{path}: cannot read {}: {e}", from.display()))?,
            Source::Session(session, _) => {
                verified(session, &format!("{ARTIFACTS_PREFIX}{path}"), &sha)
                    .map_err(|e| format!("{path}: {e}"))?
            }
        };
        let actual = crumb_core::digest::sha256_hex(&bytes);
        if actual != sha {
            return Err(format!(
                "{path}: its content hashes to {actual}, not the recorded {sha}; nothing was copied"
            ));
        }
        out.push((
            ManifestFile {
                path,
                sha256: sha,
                size: bytes.len() as u64,
            },
            bytes,
        ));
    }
    Ok(out)
}

/// Copy `source` under `to`. Every file is verified first; an existing file is refused (all of
/// them named) unless `force`; a `dry_run` writes nothing.
pub(crate) fn copy_out(
    source: &Source<'_>,
    to: &Path,
    force: bool,
    dry_run: bool,
) -> Result<Vec<Copied>, String> {
    let files = gather(source)?;
    let mut plan = Vec::new();
    let mut taken = Vec::new();
    for (file, bytes) in files {
        let target = crate::fs::confine::join_inside(to, &file.path)
            .map_err(|e| format!("{}: {e}", file.path))?;
        let exists = std::fs::symlink_metadata(&target).is_ok();
        if exists && (!force || target.is_dir()) {
            taken.push(file.path.clone());
        }
        plan.push((file, bytes, target, exists));
    }
    if !taken.is_empty() {
        return Err(format!(
            "{} file(s) exist under {}: {}; nothing was copied (--force overwrites files)",
            taken.len(),
            to.display(),
            taken.join(", ")
        ));
    }
    let mut copied = Vec::new();
    for (file, bytes, target, exists) in plan {
        if !dry_run {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            crate::runtime::meta::write_atomically(&target, &bytes)
                .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        }
        copied.push(Copied {
            path: file.path,
            sha256: file.sha256,
            size: file.size,
            replaced: exists,
        });
    }
    Ok(copied)
}
