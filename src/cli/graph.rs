//! `crumb graph <pipeline>`: print the compiled transition table as Mermaid, DOT or JSON.

use super::error::{CommandError, ExitStatus};
use super::{pipeline_file, stdout};
use crate::pipeline::compile::CompileOptions;
use crate::pipeline::graph;
use std::path::PathBuf;

/// Output format of `crumb graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    /// Mermaid `flowchart` (renders on GitHub and in Studio).
    Mermaid,
    /// Graphviz `digraph`.
    Dot,
    /// The compiled transition table itself.
    Json,
}

/// Arguments of `crumb graph`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pipeline file.
    pub pipeline: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "mermaid")]
    pub format: GraphFormat,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let table = pipeline_file::compile_or_report(&args.pipeline, CompileOptions::default())?;
    let text = match args.format {
        GraphFormat::Mermaid => graph::mermaid(&table),
        GraphFormat::Dot => graph::dot(&table),
        GraphFormat::Json => {
            let mut value = serde_json::to_value(&table).unwrap_or_default();
            // `by_kind` is a hash map; sort it so the output is stable.
            if let Some(by_kind) = value.get_mut("by_kind").and_then(|v| v.as_object_mut()) {
                by_kind.sort_keys();
            }
            let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
            text.push('\n');
            text
        }
    };
    stdout::print(text)?;
    Ok(ExitStatus::SUCCESS)
}
