//! `html`: the entry page is well-formed enough to load, and has a doctype, a viewport meta tag
//! and at least one script. No engine is assumed: any script, inline or `src`, counts.

use std::path::Path;

use serde_json::json;

use super::confine;
use super::html_scan;
use super::report::{CheckResult, CheckStatus, Finding};

/// Larger pages are refused rather than scanned.
const MAX_HTML_BYTES: u64 = 16 * 1024 * 1024;

/// Run an `html` check on `path` under `root`.
pub(crate) fn run(id: &str, blocking: bool, root: &Path, path: &str) -> CheckResult {
    let mut result = CheckResult::new(id, "html", blocking, CheckStatus::Pass);
    let full = match confine::resolve_inside(root, path) {
        Ok(p) => p,
        Err(escape) => {
            result.fail(Finding::new(confine::Escape::CODE, escape.to_string()));
            return result;
        }
    };
    match std::fs::metadata(&full) {
        Ok(meta) if meta.len() > MAX_HTML_BYTES => {
            result.fail(Finding::new(
                "too_large",
                format!("`{path}` is over {MAX_HTML_BYTES} bytes"),
            ));
            return result;
        }
        Ok(meta) if meta.is_file() => {}
        _ => {
            result.fail(Finding::new(
                "missing_file",
                format!("`{path}` was not written"),
            ));
            return result;
        }
    }
    let bytes = match std::fs::read(&full) {
        Ok(b) => b,
        Err(err) => {
            result.fail(Finding::new("unreadable", format!("`{path}`: {err}")));
            return result;
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        result.fail(Finding::new(
            "not_utf8",
            format!("`{path}` is not valid UTF-8"),
        ));
        return result;
    };
    let scan = html_scan::scan(&text);
    for error in &scan.errors {
        result.fail(Finding::new("parse_error", error.clone()));
    }
    if scan.doctype.as_deref() != Some("html") {
        result.fail(Finding::new(
            "missing_doctype",
            "the page does not start with <!doctype html>",
        ));
    }
    let has_viewport = scan.tags.iter().any(|t| {
        t.name == "meta"
            && t.attr("name")
                .is_some_and(|n| n.eq_ignore_ascii_case("viewport"))
    });
    if !has_viewport {
        result.fail(Finding::new(
            "missing_viewport",
            "no <meta name=\"viewport\"> tag",
        ));
    }
    let useful_scripts = scan
        .scripts
        .iter()
        .filter(|s| s.src.as_deref().is_some_and(|v| !v.trim().is_empty()) || s.body_len > 0)
        .count();
    if useful_scripts == 0 {
        result.fail(Finding::new(
            "missing_script",
            "no <script> with a src or a body",
        ));
    }
    let base = Path::new(path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for src in scan.scripts.iter().filter_map(|s| s.src.as_deref()) {
        if let Some(local) = local_reference(src) {
            let rel = base.join(local);
            let exists = rel
                .to_str()
                .and_then(|r| confine::resolve_inside(root, r).ok())
                .is_some_and(|p| p.is_file());
            if !exists {
                result.fail(Finding::new(
                    "script_not_found",
                    format!("<script src=\"{src}\"> names a file that does not exist"),
                ));
            }
        }
    }
    result.details = json!({
        "path": path,
        "doctype": scan.doctype,
        "viewport": has_viewport,
        "scripts": scan.scripts.len(),
        "tags": scan.tags.len(),
    });
    result
}

/// The file a `src` names when it is a plain relative reference (no scheme, no `//`, no query).
fn local_reference(src: &str) -> Option<&str> {
    let src = src.trim();
    if src.is_empty() || src.starts_with("//") || src.starts_with('/') || src.contains(':') {
        return None;
    }
    let end = src.find(['?', '#']).unwrap_or(src.len());
    Some(&src[..end])
}
