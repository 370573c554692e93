//! `crumb schema`: print a JSON Schema generated from the Rust types.
//!
//! The committed copies under `schemas/` are this command's output; a test fails when they drift.

use super::error::{CommandError, ExitStatus};
use super::stdout;
use crate::pipeline::schema;

/// Which schema to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaName {
    /// Pipeline files (`pipelines/*.yaml`).
    Pipeline,
    /// Preset files (`presets/*.yaml`).
    Preset,
    /// One line of a session's `transcript.jsonl`.
    Transcript,
}

/// Arguments of `crumb schema`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The schema to print.
    #[arg(value_enum)]
    pub which: SchemaName,
}

pub fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let text = match args.which {
        SchemaName::Pipeline => schema::render(&schema::pipeline_schema()),
        SchemaName::Preset => schema::render(&schema::preset_schema()),
        SchemaName::Transcript => crate::transcript::schema::render(),
    };
    stdout::print(text)?;
    Ok(ExitStatus::SUCCESS)
}
