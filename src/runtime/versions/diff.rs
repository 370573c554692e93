//! `crumb diff`: which files changed between two trees (two points of a session, or two
//! versions), and for a changed text file the lines that changed.

use std::fmt::Write as _;

use crate::runtime::artifact_store::tree::Tree;

/// Largest file (bytes) shown as a text diff.
const MAX_TEXT_BYTES: usize = 1 << 20;
/// Largest lines × lines table the line diff builds; past it only "changed" is said.
const MAX_CELLS: usize = 4_000_000;

/// How one path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Change {
    Added,
    Removed,
    Changed,
}

/// One path that differs between the trees.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct FileChange {
    pub path: String,
    pub change: Change,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// The paths of `before` and `after` whose content differs, in path order.
pub(crate) fn compare(before: &Tree, after: &Tree) -> Vec<FileChange> {
    let mut paths: Vec<&String> = before.keys().chain(after.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| {
            let (old, new) = (before.get(path), after.get(path));
            let change = match (old, new) {
                (Some(a), Some(b)) if a == b => return None,
                (Some(_), Some(_)) => Change::Changed,
                (None, Some(_)) => Change::Added,
                (Some(_), None) => Change::Removed,
                (None, None) => return None,
            };
            Some(FileChange {
                path: path.clone(),
                change,
                before: old.cloned(),
                after: new.cloned(),
            })
        })
        .collect()
}

/// One changed path with the text diff of its content, when both sides are text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct DiffRow {
    #[serde(flatten)]
    pub file: FileChange,
    pub text_diff: Option<String>,
}

/// The changes between two points `a` and `b` (event ids or unique prefixes) of a session.
pub(crate) fn between_points(
    session: &std::path::Path,
    opened: &super::point::Opened,
    a: &str,
    b: &str,
) -> Result<Vec<DiffRow>, String> {
    let before = super::point::point(&opened.table, &opened.events, Some(a))?;
    let after = super::point::point(&opened.table, &opened.events, Some(b))?;
    let read = |path: &str, sha: &str| {
        let recorded = format!("{}{path}", super::point::ARTIFACTS_PREFIX);
        crate::runtime::artifact_store::tree::verified(session, &recorded, sha).ok()
    };
    Ok(rows(&before.tree, &after.tree, read, read))
}

/// The changes between two trees, each file read through its side's reader for a text diff.
pub(crate) fn rows(
    before: &Tree,
    after: &Tree,
    read_before: impl Fn(&str, &str) -> Option<Vec<u8>>,
    read_after: impl Fn(&str, &str) -> Option<Vec<u8>>,
) -> Vec<DiffRow> {
    compare(before, after)
        .into_iter()
        .map(|file| {
            let text_diff = match (file.change, &file.before, &file.after) {
                (Change::Changed, Some(old), Some(new)) => read_before(&file.path, old)
                    .zip(read_after(&file.path, new))
                    .and_then(|(old, new)| text_diff(&old, &new)),
                _ => None,
            };
            DiffRow { file, text_diff }
        })
        .collect()
}

/// The changed lines of two text files (`-` removed, `+` added, two lines of context), or
/// `None` when either is not text or the files are too large to diff.
pub(crate) fn text_diff(before: &[u8], after: &[u8]) -> Option<String> {
    if before.len().max(after.len()) > MAX_TEXT_BYTES {
        return None;
    }
    let (a, b) = (text_lines(before)?, text_lines(after)?);
    if a.len().saturating_mul(b.len()) > MAX_CELLS {
        return None;
    }
    // Longest common subsequence, from the end, then one walk from the start.
    let width = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i * width + j] = if a[i] == b[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let mut lines: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i * width + j + 1] > lcs[(i + 1) * width + j])
        {
            lines.push(('+', b[j]));
            j += 1;
        } else {
            lines.push(('-', a[i]));
            i += 1;
        }
    }
    let near = |k: usize| {
        lines[k.saturating_sub(2)..(k + 3).min(lines.len())]
            .iter()
            .any(|(mark, _)| *mark != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (mark, line)) in lines.iter().enumerate() {
        if near(k) {
            if skipped {
                out.push_str("  …\n");
                skipped = false;
            }
            let _ = writeln!(out, "{mark} {line}");
        } else {
            skipped = true;
        }
    }
    Some(out)
}

/// The lines of a text file (UTF-8 without NUL).
fn text_lines(bytes: &[u8]) -> Option<Vec<&str>> {
    std::str::from_utf8(bytes)
        .ok()
        .filter(|t| !t.contains('\0'))
        .map(|t| t.lines().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_an_added_one_and_a_removed_one() {
        let before = Tree::from([
            ("game/index.html".to_owned(), "a".repeat(64)),
            ("spec.md".to_owned(), "b".repeat(64)),
            ("old.js".to_owned(), "c".repeat(64)),
        ]);
        let after = Tree::from([
            ("game/index.html".to_owned(), "d".repeat(64)),
            ("spec.md".to_owned(), "b".repeat(64)),
            ("new.js".to_owned(), "e".repeat(64)),
        ]);
        let changes: Vec<(String, Change)> = compare(&before, &after)
            .into_iter()
            .map(|c| (c.path, c.change))
            .collect();
        assert_eq!(
            changes,
            [
                ("game/index.html".to_owned(), Change::Changed),
                ("new.js".to_owned(), Change::Added),
                ("old.js".to_owned(), Change::Removed),
            ]
        );
    }

    #[test]
    fn a_text_diff_shows_the_changed_lines_and_binary_is_not_diffed() {
        let diff = text_diff(
            b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
            b"one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n",
        )
        .unwrap();
        assert_eq!(diff, "  …\n  two\n  three\n- four\n+ FOUR\n  five\n  six\n");
        assert!(text_diff(b"\0bin", b"text").is_none());
        assert_eq!(text_diff(b"same\n", b"same\n").unwrap(), "");
    }
}
