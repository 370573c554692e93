//! `crumb copy-artifacts <session|version> --to DIR [--force] [--dry-run]`: the whole tree of a
//! version (or of a session point: by default the build its final verdict judged) copied into
//! a folder, recursively, every file verified against its sha256 first.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use crate::runtime::versions::copy::{Source, copy_out};
use crate::runtime::versions::point::point;

/// Arguments of `crumb copy-artifacts`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A version of this project (by name), or a session (id, prefix or folder).
    pub source: String,
    /// The folder to copy into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// For a session: the event whose tree to copy (default: the build the final verdict judged).
    #[arg(long, value_name = "EVENT")]
    pub at: Option<String>,
    /// Overwrite files that exist under DIR.
    #[arg(long)]
    pub force: bool,
    /// Verify and list what would be copied; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub flags: super::versions_ref::VersionFlags,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.flags.home.as_deref())?;
    let copied = match super::versions_ref::version(&home, &args.source) {
        Some(version) if args.at.is_none() => copy_out(
            &Source::Version(&version),
            &args.to,
            args.force,
            args.dry_run,
        ),
        _ => {
            let session = super::versions_ref::open_session(&home, &args.source)?;
            let point = point(&session.table, &session.events, args.at.as_deref())
                .map_err(CommandError::usage)?;
            copy_out(
                &Source::Session(session.dir.path(), &point),
                &args.to,
                args.force,
                args.dry_run,
            )
        }
    }
    .map_err(CommandError::usage)?;
    let text = if args.flags.json {
        serde_json::to_string_pretty(&copied).map_err(CommandError::failure_from)? + "\n"
    } else {
        let mut out = String::new();
        let verb = if args.dry_run { "would copy" } else { "copied" };
        for file in &copied {
            let replaced = if file.replaced { " (replaced)" } else { "" };
            let _ = writeln!(
                out,
                "{verb} {}  {} bytes  sha256 {}…{replaced}",
                file.path,
                file.size,
                &file.sha256[..12]
            );
        }
        let _ = writeln!(
            out,
            "{} file(s) verified{}",
            copied.len(),
            if args.dry_run {
                "; nothing written (--dry-run)"
            } else {
                ""
            }
        );
        out
    };
    super::stdout::print(&text)?;
    Ok(ExitStatus::SUCCESS)
}
