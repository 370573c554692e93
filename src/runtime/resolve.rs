//! Resolving a `<session>` argument: a full ULID, a unique ULID prefix, or a path to a session
//! directory or to a file inside one (its `transcript.jsonl`, say).
//!
//! Ids are looked up in the current project first and then in every project, so a session id
//! copied from another checkout still works; an ambiguous prefix lists its candidates instead of
//! picking one.

use std::path::{Path, PathBuf};

use super::session::SessionError;
use super::session_dir::{NotASession, SessionDir};
use crate::home::{CrumbHome, Project};

/// How many candidates an ambiguity error lists.
const SHOWN_CANDIDATES: usize = 10;

/// A `<session>` argument that does not name exactly one session.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResolveError {
    #[error("`{reference}` is neither a session id (ULID or prefix) nor a path")]
    Invalid { reference: String },
    #[error("no session matches `{reference}`")]
    NotFound { reference: String },
    #[error("`{reference}` matches {count} sessions; use more characters:\n{shown}", shown = format_candidates(.candidates, *.count))]
    Ambiguous {
        reference: String,
        count: usize,
        candidates: Vec<String>,
    },
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    NotASession(#[from] NotASession),
}

fn format_candidates(candidates: &[String], count: usize) -> String {
    let mut lines: Vec<String> = candidates.iter().map(|id| format!("  {id}")).collect();
    if count > candidates.len() {
        lines.push(format!("  … and {} more", count - candidates.len()));
    }
    lines.join("\n")
}

/// Resolve `reference` against `home`, preferring sessions of `project`.
pub(crate) fn resolve(
    home: &CrumbHome,
    project: Option<&Project>,
    reference: &str,
) -> Result<SessionDir, ResolveError> {
    if looks_like_path(reference) {
        return open_path(Path::new(reference));
    }
    let prefix = reference.to_ascii_uppercase();
    if prefix.is_empty() || prefix.len() > 26 || !prefix.chars().all(is_crockford) {
        return Err(ResolveError::Invalid {
            reference: reference.to_owned(),
        });
    }
    if let Some(project) = project {
        let matches = matching(&home.sessions_dir(project), &prefix);
        if !matches.is_empty() {
            return pick(reference, matches);
        }
    }
    let mut matches = Vec::new();
    if let Ok(projects) = std::fs::read_dir(home.projects_dir()) {
        for entry in projects.flatten() {
            matches.extend(matching(&entry.path().join("sessions"), &prefix));
        }
    }
    pick(reference, matches)
}

fn looks_like_path(reference: &str) -> bool {
    reference.contains('/') || reference.starts_with('.') || Path::new(reference).exists()
}

/// A session directory, or the directory holding a file of one.
fn open_path(path: &Path) -> Result<SessionDir, ResolveError> {
    let dir = if path.is_file() {
        path.parent().unwrap_or(Path::new("."))
    } else {
        path
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    Ok(SessionDir::open(dir)?)
}

fn is_crockford(c: char) -> bool {
    c.is_ascii_digit() || (c.is_ascii_uppercase() && !matches!(c, 'I' | 'L' | 'O' | 'U'))
}

/// Session folders in `sessions` whose name starts with `prefix`.
fn matching(sessions: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(sessions) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with(prefix))
        })
        .map(|entry| entry.path())
        .collect()
}

fn pick(reference: &str, mut matches: Vec<PathBuf>) -> Result<SessionDir, ResolveError> {
    match matches.len() {
        0 => Err(ResolveError::NotFound {
            reference: reference.to_owned(),
        }),
        1 => Ok(SessionDir::open(matches.remove(0))?),
        count => {
            matches.sort();
            let candidates = matches
                .iter()
                .take(SHOWN_CANDIDATES)
                .map(|path| {
                    path.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            Err(ResolveError::Ambiguous {
                reference: reference.to_owned(),
                count,
                candidates,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_session(home: &CrumbHome, project: &str, id: &str) -> PathBuf {
        let dir = home.projects_dir().join(project).join("sessions").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), "{}").unwrap();
        std::fs::write(dir.join("transcript.jsonl"), "").unwrap();
        dir
    }

    #[test]
    fn ids_prefixes_and_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let home = CrumbHome::at(tmp.path());
        let project = Project {
            root: PathBuf::from("/p"),
            id: "aaaa".into(),
        };
        let a = fake_session(&home, "aaaa", "01JAAAAAAAAAAAAAAAAAAAAAAA");
        fake_session(&home, "aaaa", "01JAAAAAAAAAAAAAAAAAAAAAAB");
        let other = fake_session(&home, "bbbb", "01JBBBBBBBBBBBBBBBBBBBBBBB");

        let full = resolve(&home, Some(&project), "01JAAAAAAAAAAAAAAAAAAAAAAA").unwrap();
        assert_eq!(full.path(), a);
        assert_eq!(
            resolve(&home, Some(&project), "01jaaaaaaaaaaaaaaaaaaaaaaa")
                .unwrap()
                .path(),
            a
        );
        // Not in this project: found in another one.
        assert_eq!(
            resolve(&home, Some(&project), "01JB").unwrap().path(),
            other
        );
        match resolve(&home, Some(&project), "01JA") {
            Err(ResolveError::Ambiguous {
                count: 2,
                candidates,
                ..
            }) => {
                assert_eq!(
                    candidates,
                    ["01JAAAAAAAAAAAAAAAAAAAAAAA", "01JAAAAAAAAAAAAAAAAAAAAAAB"]
                );
            }
            other => panic!("expected ambiguity, got {other:?}"),
        }
        assert!(matches!(
            resolve(&home, Some(&project), "01JZ"),
            Err(ResolveError::NotFound { .. })
        ));
        assert!(matches!(
            resolve(&home, None, "hello world"),
            Err(ResolveError::Invalid { .. })
        ));
        assert!(matches!(
            resolve(&home, None, ""),
            Err(ResolveError::Invalid { .. })
        ));

        let by_dir = resolve(&home, None, a.to_str().unwrap()).unwrap();
        assert_eq!(by_dir.id(), "01JAAAAAAAAAAAAAAAAAAAAAAA");
        let by_file = resolve(&home, None, a.join("transcript.jsonl").to_str().unwrap()).unwrap();
        assert_eq!(by_file.id(), "01JAAAAAAAAAAAAAAAAAAAAAAA");
        assert!(matches!(
            resolve(&home, None, "/nonexistent/x"),
            Err(ResolveError::NotASession(_))
        ));
    }

    proptest::proptest! {
        #[test]
        fn any_reference_resolves_or_errors(reference in "\\PC{0,40}") {
            let tmp = tempfile::tempdir().unwrap();
            let home = CrumbHome::at(tmp.path());
            fake_session(&home, "aaaa", "01JAAAAAAAAAAAAAAAAAAAAAAA");
            let _ = resolve(&home, None, &reference);
        }
    }
}
