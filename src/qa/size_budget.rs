//! `max_bytes`: the files matching a glob add up to at most a limit.
//!
//! `*` does not cross `/` (globset `literal_separator`), so `game/*` means the folder's own files
//! and `game/**` the whole tree. Symlinks are not followed; one that points outside the artifacts
//! folder is a finding. The walk is bounded so a hostile tree cannot stall QA.

use std::path::Path;

use globset::GlobBuilder;
use serde_json::json;

use super::confine;
use super::report::{CheckResult, CheckStatus, Finding};

/// Most entries visited before the check gives up with a finding.
const MAX_ENTRIES: usize = 200_000;
/// Deepest folder nesting visited.
const MAX_DEPTH: usize = 64;

/// Run a `max_bytes` check against `root`.
pub(crate) fn run(
    id: &str,
    blocking: bool,
    root: &Path,
    glob: &str,
    limit_bytes: u64,
) -> CheckResult {
    let mut result = CheckResult::new(id, "max_bytes", blocking, CheckStatus::Pass);
    let matcher = match GlobBuilder::new(glob).literal_separator(true).build() {
        Ok(g) => g.compile_matcher(),
        Err(err) => {
            result.fail(Finding::new(
                "bad_glob",
                format!("glob `{glob}` does not compile: {err}"),
            ));
            return result;
        }
    };
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut walk = Walk {
        total: 0,
        files: 0,
        visited: 0,
        findings: Vec::new(),
    };
    walk.visit(root, root, &real_root, 0, &matcher);
    result.details = json!({ "glob": glob, "total_bytes": walk.total, "limit_bytes": limit_bytes, "files": walk.files });
    for finding in walk.findings {
        result.fail(finding);
    }
    if walk.files == 0 {
        result.fail(Finding::new(
            "no_match",
            format!("no file matches `{glob}`"),
        ));
    }
    if walk.total > limit_bytes {
        result.fail(Finding::new(
            "over_budget",
            format!(
                "files matching `{glob}` total {} bytes, over the limit of {limit_bytes}",
                walk.total
            ),
        ));
    }
    result
}

struct Walk {
    total: u64,
    files: u64,
    visited: usize,
    findings: Vec<Finding>,
}

impl Walk {
    fn visit(
        &mut self,
        root: &Path,
        dir: &Path,
        real_root: &Path,
        depth: usize,
        matcher: &globset::GlobMatcher,
    ) {
        if depth > MAX_DEPTH {
            self.findings.push(Finding::new(
                "tree_too_deep",
                format!("more than {MAX_DEPTH} nested folders"),
            ));
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            self.visited += 1;
            if self.visited > MAX_ENTRIES {
                if !self.findings.iter().any(|f| f.code == "tree_too_large") {
                    self.findings.push(Finding::new(
                        "tree_too_large",
                        format!("more than {MAX_ENTRIES} entries"),
                    ));
                }
                return;
            }
            let path = entry.path();
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let in_glob = matcher.is_match(rel);
            if kind.is_symlink() {
                if in_glob && !confine::really_inside(real_root, &path) {
                    self.findings.push(Finding::new(
                        "path_escape",
                        format!(
                            "`{}` is a symlink leading outside the artifacts folder",
                            rel.display()
                        ),
                    ));
                } else if in_glob
                    && let Ok(meta) = std::fs::metadata(&path)
                    && meta.is_file()
                {
                    self.total = self.total.saturating_add(meta.len());
                    self.files += 1;
                }
            } else if kind.is_dir() {
                self.visit(root, &path, real_root, depth + 1, matcher);
            } else if in_glob && let Ok(meta) = entry.metadata() {
                self.total = self.total.saturating_add(meta.len());
                self.files += 1;
            }
        }
    }
}
