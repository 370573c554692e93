//! Paths worked out by text alone: templates, fragments and argv paths are resolved against
//! folders that may not exist (a pipeline compiled from memory), so `.` and `..` are folded
//! without asking the file system.

use std::path::{Component, Path, PathBuf};

/// Resolve `.` and `..` without touching the file system (the file may not exist).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last = out.components().next_back();
                if matches!(last, Some(Component::Normal(_))) {
                    out.pop();
                } else if !matches!(last, Some(Component::RootDir | Component::Prefix(_))) {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}
