//! `crumb graph <pipeline>`: print the compiled transition table as Mermaid, DOT or JSON.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::pipeline::compile::{CompileOptions, compile_file};
use crate::pipeline::graph;
use crate::pipeline::render::{FileReport, Format, render};

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

pub fn run(args: &Args) -> ExitCode {
    let compiled = compile_file(&args.pipeline, &CompileOptions::default());
    let Some(table) = compiled.table else {
        let report = FileReport {
            file: args.pipeline.clone(),
            diagnostics: compiled.diagnostics,
            sources: compiled.sources,
        };
        eprint!("{}", render(&[report], Format::Human));
        eprintln!(
            "crumb graph: {} is not a valid pipeline (see `crumb validate`)",
            args.pipeline.display()
        );
        return ExitCode::from(1);
    };
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
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("crumb graph: cannot write: {err}");
            ExitCode::from(2)
        }
        _ => ExitCode::SUCCESS,
    }
}
