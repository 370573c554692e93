//! Releases: a point of a session frozen as a named version of the project
//! (`$CRUMB_HOME/projects/<id>/versions/<name>/`: `manifest.json` and `files/`), listed by
//! `crumb versions`, copied out and verified by `crumb copy-artifacts`, compared by `crumb diff`.

pub(crate) mod copy;
pub(crate) mod diff;
pub(crate) mod manifest;
pub(crate) mod point;
pub(crate) mod release;
pub(crate) mod zip;

use std::path::{Path, PathBuf};

/// The versions folder of the project `session` belongs to (`<project>/sessions/<id>` →
/// `<project>/versions`).
pub(crate) fn dir_of_session(session: &Path) -> PathBuf {
    session.parent().and_then(Path::parent).map_or_else(
        || session.join("versions"),
        |project| project.join("versions"),
    )
}

/// Every version in `dir`, oldest first (by creation time, then name).
pub(crate) fn list(dir: &Path) -> Vec<manifest::Manifest> {
    let mut found: Vec<manifest::Manifest> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|entry| manifest::Manifest::read(&entry.path()).ok())
        .collect();
    found.sort_by(|a, b| (&a.created, &a.name).cmp(&(&b.created, &b.name)));
    found
}
