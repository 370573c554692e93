//! The pipeline file a command was given: compiled, or the reason it cannot be used.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::CommandError;
use crate::fs::recorded_reads::RecordedReads;
use crate::pipeline::compile::{CompileOptions, Compiled, compile_file};
use crate::pipeline::diagnostic_render::{FileReport, Format, render};
use crate::pipeline::source::SourceFiles;
use crate::pipeline::table::TransitionTable;

/// The report `crumb validate` would print for one compiled file.
pub(crate) fn report(file: &Path, compiled: Compiled) -> FileReport {
    FileReport {
        file: file.to_path_buf(),
        diagnostics: compiled.diagnostics,
        sources: compiled.sources,
    }
}

/// [`compile_recording`] when the files it read are not needed.
pub(crate) fn compile_or_report(
    path: &Path,
    options: CompileOptions,
) -> Result<TransitionTable, CommandError> {
    compile_recording(path, options).map(|(table, _)| table)
}

/// Compile the pipeline a command was given, with the real paths of the files the compile read
/// (what freezing a session copies): a usage error when the path does not exist (as
/// `crumb validate` treats it), an invalid pipeline, its diagnostics printed to stderr first,
/// when it does not compile.
pub(crate) fn compile_recording(
    path: &Path,
    options: CompileOptions,
) -> Result<(TransitionTable, Vec<PathBuf>), CommandError> {
    if let Err(err) = std::fs::metadata(path) {
        let missing = err.kind() == std::io::ErrorKind::NotFound;
        let error = CommandError::usage(path.display().to_string()).because(err);
        return Err(if missing {
            error
                .hint("`crumb init --from casual|doc-review|code` starts a project with a pipeline")
        } else {
            error
        });
    }
    let files = RecordedReads::shared();
    let shared: Arc<dyn SourceFiles> = files.clone();
    let mut compiled = compile_file(path, &options, &shared);
    if let Some(table) = compiled.table.take() {
        return Ok((table, files.paths()));
    }
    eprint!("{}", render(&[report(path, compiled)], Format::Human));
    Err(CommandError::invalid_pipeline(format!(
        "{} is not a valid pipeline (see `crumb validate`); nothing was done",
        path.display()
    )))
}
