//! `crumb release`: freeze a point's tree as a named version. The version is built under
//! `versions/.tmp-<ULID>/` and renamed into place, so it appears whole or not at all, and the
//! rename refuses a name another release took first: names are unique per project.

use std::path::Path;

use super::manifest::{FILES_DIR, MANIFEST_FILE, Manifest, ManifestFile};
use super::point::{ARTIFACTS_PREFIX, Point};
use crate::runtime::artifact_store::objects::ObjectStore;
use crate::runtime::artifact_store::tree::verified;

/// Longest version name.
const MAX_NAME: usize = 64;

/// What one release records besides the point.
pub(crate) struct Release<'a> {
    pub session: &'a Path,
    pub session_id: &'a str,
    pub pipeline_hash: &'a str,
    pub name: Option<&'a str>,
    pub note: Option<&'a str>,
}

/// Why a name cannot name a version.
fn name_problem(name: &str) -> Option<&'static str> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if name.is_empty() || name.len() > MAX_NAME {
        return Some("a version name has 1 to 64 characters");
    }
    if name.starts_with('.') || !name.chars().all(safe) {
        return Some(
            "a version name uses letters, digits, `.`, `_` and `-`, and does not start with `.`",
        );
    }
    None
}

/// The first `v<n>` no version in `dir` has.
fn next_name(dir: &Path) -> String {
    (1..=u32::MAX)
        .map(|n| format!("v{n}"))
        .find(|name| !dir.join(name).exists())
        .unwrap_or_else(|| format!("v-{}", ulid::Ulid::new()))
}

/// Freeze `point` of `release.session` into `dir` (the project's versions folder).
pub(crate) fn release(
    dir: &Path,
    point: &Point,
    release: &Release<'_>,
) -> Result<Manifest, String> {
    let name = match release.name {
        Some(name) => {
            if let Some(problem) = name_problem(name) {
                return Err(format!("`{name}`: {problem}"));
            }
            name.to_owned()
        }
        None => next_name(dir),
    };
    let target = dir.join(&name);
    if target.exists() {
        return Err(format!(
            "a version named `{name}` exists in this project; choose another with --as"
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let building = dir.join(format!(".tmp-{}", ulid::Ulid::new()));
    let built = build(&building, &name, point, release).and_then(|manifest| {
        std::fs::rename(&building, &target)
            .map_err(|_| {
                format!("a version named `{name}` was released meanwhile; choose another with --as")
            })
            .map(|()| manifest)
    });
    if built.is_err() {
        let _ = std::fs::remove_dir_all(&building);
    }
    built
}

fn build(
    building: &Path,
    name: &str,
    point: &Point,
    release: &Release<'_>,
) -> Result<Manifest, String> {
    let store = ObjectStore::of(release.session);
    let mut files = Vec::new();
    for (path, sha) in &point.tree {
        let recorded = format!("{ARTIFACTS_PREFIX}{path}");
        let bytes = verified(release.session, &recorded, sha)
            .map_err(|why| format!("cannot release {recorded}: {why}"))?;
        let to = crate::fs::confine::join_inside(&building.join(FILES_DIR), path)
            .map_err(|e| format!("{recorded}: {e}"))?;
        if store.contains(sha) {
            store.link_to(sha, &to).map_err(|e| e.to_string())?;
        } else {
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(&to, &bytes).map_err(|e| e.to_string())?;
        }
        files.push(ManifestFile {
            path: path.clone(),
            sha256: sha.clone(),
            size: bytes.len() as u64,
        });
    }
    let manifest = Manifest {
        name: name.to_owned(),
        session: release.session_id.to_owned(),
        at: point.event_id.clone(),
        note: release.note.map(str::to_owned),
        created: crate::runtime::meta::now_rfc3339(),
        pipeline_hash: release.pipeline_hash.to_owned(),
        judged: point.judged.clone(),
        files,
    };
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
    crate::runtime::meta::write_atomically(&building.join(MANIFEST_FILE), text.as_bytes())
        .map_err(|e| format!("cannot write the manifest: {e}"))?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_numbered() {
        assert!(name_problem("v1").is_none());
        assert!(name_problem("good-round_2.0").is_none());
        assert!(name_problem("../x").is_some());
        assert!(name_problem(".hidden").is_some());
        assert!(name_problem("").is_some());
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(next_name(dir.path()), "v1");
        std::fs::create_dir(dir.path().join("v1")).unwrap();
        assert_eq!(next_name(dir.path()), "v2");
    }
}
