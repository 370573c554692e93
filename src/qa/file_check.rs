//! `file`: an artifact exists, is a regular file, and its size is within the declared bounds.

use std::path::Path;

use serde_json::json;

use super::confine;
use super::report::{CheckResult, CheckStatus, Finding};

/// Run a `file` check against `root` (the artifacts folder).
pub(crate) fn run(
    id: &str,
    blocking: bool,
    root: &Path,
    path: &str,
    min_bytes: Option<u64>,
    max_bytes: Option<u64>,
) -> CheckResult {
    let mut result = CheckResult::new(id, "file", blocking, CheckStatus::Pass);
    let full = match confine::resolve_inside(root, path) {
        Ok(p) => p,
        Err(escape) => {
            result.fail(Finding::new(confine::Escape::CODE, escape.to_string()));
            return result;
        }
    };
    let meta = match std::fs::metadata(&full) {
        Ok(m) => m,
        Err(err) => {
            result.fail(Finding::new(
                "missing_file",
                format!("`{path}` was not written ({err})"),
            ));
            return result;
        }
    };
    if !meta.is_file() {
        result.fail(Finding::new(
            "not_a_file",
            format!("`{path}` is not a regular file"),
        ));
        return result;
    }
    let size = meta.len();
    result.details = json!({ "path": path, "bytes": size });
    if let Some(min) = min_bytes.filter(|&min| size < min) {
        result.fail(Finding::new(
            "too_small",
            format!("`{path}` is {size} bytes, less than the minimum {min}"),
        ));
    }
    if let Some(max) = max_bytes.filter(|&max| size > max) {
        result.fail(Finding::new(
            "too_large",
            format!("`{path}` is {size} bytes, more than the maximum {max}"),
        ));
    }
    result
}
