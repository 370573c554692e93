//! `crumb check [PATH]...`: prove a pipeline's route before a token is spent — every terminal
//! outcome reachable, no dead end, every loop bounded — by exploring its compiled table with the
//! real reducer ([`crate::engine::explore`]).
//!
//! Exit `SUCCESS` when every file is proven, `FAILURE` when one has a violation (printed with the
//! path that shows it), `INVALID_PIPELINE` when one does not compile, `USAGE_ERROR` for a path
//! that does not exist.

use std::path::PathBuf;

use super::error::{CommandError, ErrorKind, ExitStatus};
use super::{pipeline_file, stdout};
use crate::engine::explore::{self, Options};
use crate::pipeline::compile::CompileOptions;

/// `--format` of `crumb check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Human,
    Json,
}

/// Arguments of `crumb check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pipeline files, or folders of them (`*.yaml`, `*.yml`).
    #[arg(default_value = "pipelines/")]
    pub paths: Vec<PathBuf>,
    /// Output format: a report per pipeline, or one JSON array of reports.
    #[arg(long, value_enum, default_value = "human")]
    pub format: CheckFormat,
    /// Most distinct states to explore per pipeline; past it the check fails (nothing proven).
    #[arg(long, value_name = "N", default_value_t = Options::default().max_states)]
    pub max_states: usize,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let files = super::validate::expand(&args.paths).map_err(CommandError::usage)?;
    let options = Options {
        max_states: args.max_states,
        ..Options::default()
    };
    let mut reports = Vec::new();
    for file in &files {
        let table = pipeline_file::compile_or_report(file, CompileOptions::default())?;
        reports.push((file, explore::check(&table, options)));
    }
    let text = match args.format {
        CheckFormat::Human => reports
            .iter()
            .map(|(file, report)| format!("{}\n{}", file.display(), report.text()))
            .collect::<Vec<_>>()
            .join("\n"),
        CheckFormat::Json => {
            let all: Vec<_> = reports.iter().map(|(_, report)| report).collect();
            let mut text = serde_json::to_string_pretty(&all).unwrap_or_default();
            text.push('\n');
            text
        }
    };
    stdout::print(text)?;
    let failed = reports.iter().filter(|(_, r)| !r.ok()).count();
    eprintln!(
        "crumb check: {} pipeline{}, {failed} with violations",
        reports.len(),
        if reports.len() == 1 { "" } else { "s" }
    );
    if failed > 0 {
        // The report and the summary said which.
        return Err(CommandError::reported(ErrorKind::Failure));
    }
    Ok(ExitStatus::SUCCESS)
}
