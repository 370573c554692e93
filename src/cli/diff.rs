//! `crumb diff <session> <event-a> <event-b>` or `crumb diff <version-a> <version-b>`: the files
//! that changed between two points, with the changed lines of text files.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use crate::runtime::artifact_store::tree::{Tree, verified};
use crate::runtime::versions::diff::{Change, compare, text_diff};
use crate::runtime::versions::manifest::Manifest;
use crate::runtime::versions::point::{ARTIFACTS_PREFIX, point};

/// Arguments of `crumb diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `<session> <event-a> <event-b>`, or `<version-a> <version-b>`.
    #[arg(num_args = 2..=3, required = true)]
    pub points: Vec<String>,
    /// Print the changed files (and text diffs) as JSON.
    #[arg(long)]
    pub json: bool,
    /// The crumb home (default `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long)]
    pub home: Option<PathBuf>,
}

/// Reads a file (path, sha256) of one side, `None` when it cannot be read intact.
type ReadFile = Box<dyn Fn(&str, &str) -> Option<Vec<u8>>>;

/// One side of the comparison: its tree and how to read a file of it.
struct Side {
    tree: Tree,
    read: ReadFile,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.home.as_deref())?;
    let (before, after) = match args.points.as_slice() {
        [session, a, b] => {
            let session = super::versions_ref::open_session(&home, session)?;
            let side = |at: &str| -> Result<Side, CommandError> {
                let point = point(&session.table, &session.events, Some(at))
                    .map_err(CommandError::usage)?;
                let dir = session.dir.path().to_path_buf();
                Ok(Side {
                    tree: point.tree,
                    read: Box::new(move |path, sha| {
                        verified(&dir, &format!("{ARTIFACTS_PREFIX}{path}"), sha).ok()
                    }),
                })
            };
            (side(a)?, side(b)?)
        }
        [a, b] => {
            let side = |name: &str| -> Result<Side, CommandError> {
                let dir = super::versions_ref::version(&home, name).ok_or_else(|| {
                    CommandError::usage(format!(
                        "`{name}` is not a version of this project (`crumb versions` lists them); to compare two events give the session first"
                    ))
                })?;
                let manifest = Manifest::read(&dir).map_err(CommandError::usage)?;
                Ok(Side {
                    tree: manifest
                        .files
                        .into_iter()
                        .map(|f| (f.path, f.sha256))
                        .collect(),
                    read: Box::new(move |path, _| std::fs::read(Manifest::file(&dir, path)).ok()),
                })
            };
            (side(a)?, side(b)?)
        }
        _ => {
            return Err(CommandError::usage(
                "give <session> <event-a> <event-b>, or two versions",
            ));
        }
    };
    let changes = compare(&before.tree, &after.tree);
    let texts: Vec<Option<String>> = changes
        .iter()
        .map(|c| match (c.change, &c.before, &c.after) {
            (Change::Changed, Some(old), Some(new)) => {
                text_diff(&(before.read)(&c.path, old)?, &(after.read)(&c.path, new)?)
            }
            _ => None,
        })
        .collect();
    let text = if args.json {
        let rows: Vec<serde_json::Value> = changes
            .iter()
            .zip(&texts)
            .map(|(c, t)| serde_json::json!({"path": c.path, "change": c.change, "before": c.before, "after": c.after, "text_diff": t}))
            .collect();
        serde_json::to_string_pretty(&rows).map_err(CommandError::failure_from)? + "\n"
    } else if changes.is_empty() {
        "no file changed\n".to_owned()
    } else {
        let mut out = String::new();
        for (c, t) in changes.iter().zip(&texts) {
            let mark = match c.change {
                Change::Added => "added  ",
                Change::Removed => "removed",
                Change::Changed => "changed",
            };
            let _ = writeln!(out, "{mark} {}", c.path);
            if let Some(t) = t {
                for line in t.lines() {
                    let _ = writeln!(out, "    {line}");
                }
            }
        }
        out
    };
    super::stdout::print(&text)?;
    Ok(ExitStatus::SUCCESS)
}
