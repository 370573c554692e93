//! `crumb validate [PATH]...`: check pipeline and preset files without running anything.
//!
//! Report on stdout, a one-line summary on stderr. Exit `SUCCESS` clean, `INVALID_PIPELINE` when a
//! file has errors (or warnings under `--deny-warnings`), `USAGE_ERROR` for a path that does not
//! exist or a folder with no YAML in it ([`crate::exit_codes`]).

use std::path::{Path, PathBuf};

use super::error::{CommandError, ErrorKind, ExitStatus};
use super::stdout;
use crate::pipeline::diagnostic_render::{FileReport, Format, render, totals};
use crate::pipeline::file_report;

/// `--format` as clap reads it (the core's [`Format`] knows nothing of clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Human,
    Json,
    Github,
}

impl From<FormatArg> for Format {
    fn from(arg: FormatArg) -> Self {
        match arg {
            FormatArg::Human => Format::Human,
            FormatArg::Json => Format::Json,
            FormatArg::Github => Format::Github,
        }
    }
}

/// Arguments of `crumb validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pipeline or preset files, or folders of them (`*.yaml`, `*.yml`). Files in a folder named
    /// `presets`, named `*.preset.yaml`, or holding only adapter bindings are checked as presets.
    #[arg(default_value = "pipelines/")]
    pub paths: Vec<PathBuf>,
    /// Output format; `github` is chosen automatically when `GITHUB_ACTIONS=true`.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Treat warnings as errors (exit 3, invalid, when there are any).
    #[arg(long)]
    pub deny_warnings: bool,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let files = expand(&args.paths).map_err(CommandError::usage)?;
    let reports: Vec<FileReport> = files.iter().map(|file| validate_one(file)).collect();
    let format = args.format.map_or_else(
        || {
            if std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
                Format::Github
            } else {
                Format::Human
            }
        },
        Format::from,
    );
    let text = render(&reports, format);
    stdout::print(text)?;
    let (errors, warnings) = totals(&reports);
    let failed = errors > 0 || (args.deny_warnings && warnings > 0);
    eprintln!(
        "crumb validate: {} file{}, {errors} error{}, {warnings} warning{}{}",
        reports.len(),
        plural(reports.len()),
        plural(errors),
        plural(warnings),
        if failed { " — invalid" } else { " — ok" },
    );
    if failed {
        // The report and the summary said why.
        return Err(CommandError::reported(ErrorKind::InvalidPipeline));
    }
    Ok(ExitStatus::SUCCESS)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Files to check, in a stable order. Folders contribute their `*.yaml`/`*.yml` (not recursive:
/// template folders and fixtures live beside pipelines).
pub(crate) fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        let metadata =
            std::fs::metadata(path).map_err(|err| format!("{}: {err}", path.display()))?;
        if !metadata.is_dir() {
            files.push(path.clone());
            continue;
        }
        let entries =
            std::fs::read_dir(path).map_err(|err| format!("{}: {err}", path.display()))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        if found.is_empty() {
            return Err(format!(
                "{}: no pipeline or preset files (*.yaml, *.yml) in this folder",
                path.display()
            ));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

fn validate_one(file: &Path) -> FileReport {
    file_report::read_and_report(file, &crate::fs::real_files())
}
