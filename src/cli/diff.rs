//! `crumb diff <session> <event-a> <event-b>` or `crumb diff <version-a> <version-b>`: the files
//! that changed between two points, with the changed lines of text files.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use crate::runtime::artifact_store::tree::Tree;
use crate::runtime::versions::diff::{Change, DiffRow, between_points, rows};
use crate::runtime::versions::manifest::Manifest;

/// Arguments of `crumb diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `<session> <event-a> <event-b>`, or `<version-a> <version-b>`.
    #[arg(num_args = 2..=3, required = true)]
    pub points: Vec<String>,
    #[command(flatten)]
    pub flags: super::versions_ref::VersionFlags,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.flags.home.as_deref())?;
    let changes = match args.points.as_slice() {
        [session, a, b] => {
            let project = crate::home::Project::current().ok();
            let dir = crate::runtime::resolve::resolve(&home, project.as_ref(), session)?;
            let opened =
                crate::runtime::versions::point::open(&dir).map_err(CommandError::usage)?;
            between_points(dir.path(), &opened, a, b).map_err(CommandError::usage)?
        }
        [a, b] => {
            let version = |name: &str| -> Result<(PathBuf, Tree), CommandError> {
                let dir = super::versions_ref::version(&home, name).ok_or_else(|| {
                    CommandError::usage(format!(
                        "`{name}` is not a version of this project (`crumb versions` lists them); to compare two events give the session first"
                    ))
                })?;
                let manifest = Manifest::read(&dir).map_err(CommandError::usage)?;
                let tree = manifest
                    .files
                    .into_iter()
                    .map(|f| (f.path, f.sha256))
                    .collect();
                Ok((dir, tree))
            };
            let ((dir_a, tree_a), (dir_b, tree_b)) = (version(a)?, version(b)?);
            rows(
                &tree_a,
                &tree_b,
                |path, _| std::fs::read(Manifest::file(&dir_a, path)).ok(),
                |path, _| std::fs::read(Manifest::file(&dir_b, path)).ok(),
            )
        }
        _ => {
            return Err(CommandError::usage(
                "give <session> <event-a> <event-b>, or two versions",
            ));
        }
    };
    let text = if args.flags.json {
        serde_json::to_string_pretty(&changes).map_err(CommandError::failure_from)? + "\n"
    } else {
        render(&changes)
    };
    super::stdout::print(&text)?;
    Ok(ExitStatus::SUCCESS)
}

fn render(changes: &[DiffRow]) -> String {
    if changes.is_empty() {
        return "no file changed\n".to_owned();
    }
    let mut out = String::new();
    for row in changes {
        let mark = match row.file.change {
            Change::Added => "added  ",
            Change::Removed => "removed",
            Change::Changed => "changed",
        };
        let _ = writeln!(out, "{mark} {}", row.file.path);
        for line in row.text_diff.iter().flat_map(|t| t.lines()) {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}
