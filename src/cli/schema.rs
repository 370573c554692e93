//! `crumb schema`: print a JSON Schema generated from the Rust types.
//!
//! The committed copies under `schemas/` are this command's output; a test fails when they drift.

use std::io::Write;
use std::process::ExitCode;

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

pub fn run(args: &Args) -> ExitCode {
    let text = match args.which {
        SchemaName::Pipeline => schema::render(&schema::pipeline_schema()),
        SchemaName::Preset => schema::render(&schema::preset_schema()),
        SchemaName::Transcript => crate::transcript::schema::render(),
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("crumb schema: cannot write: {err}");
            ExitCode::from(2)
        }
    }
}
