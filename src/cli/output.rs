//! What every command does the same way: print to stdout, and compile the pipeline it was given.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::exit_codes::{self, FAILURE, INVALID_PIPELINE, SUCCESS, USAGE_ERROR};
use crate::pipeline::compile::{CompileOptions, Compiled, compile_file};
use crate::pipeline::diagnostic_render::{FileReport, Format, render};
use crate::pipeline::table::TransitionTable;

/// Write `text` to stdout and flush. A closed pipe (`crumb … | head`) is not an error: the reader
/// has what it wanted. Any other write failure is [`FAILURE`].
pub(crate) fn print(text: impl AsRef<[u8]>, command: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_ref())
        .and_then(|()| stdout.flush())
    {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("crumb {command}: cannot write: {err}");
            exit_codes::exit(FAILURE)
        }
        _ => exit_codes::exit(SUCCESS),
    }
}

/// The report `crumb validate` would print for one compiled file.
pub(crate) fn report(file: &Path, compiled: Compiled) -> FileReport {
    FileReport {
        file: file.to_path_buf(),
        diagnostics: compiled.diagnostics,
        sources: compiled.sources,
    }
}

/// Compile the pipeline a command was given, or print why it cannot be used and return the exit
/// code: [`USAGE_ERROR`] when the path does not exist (as `crumb validate` treats it),
/// [`INVALID_PIPELINE`] with the diagnostics on stderr when it does not compile.
pub(crate) fn compile_or_report(
    command: &str,
    path: &Path,
    options: CompileOptions,
) -> Result<TransitionTable, u8> {
    if let Err(err) = std::fs::metadata(path) {
        eprintln!("crumb {command}: {}: {err}", path.display());
        return Err(USAGE_ERROR);
    }
    let mut compiled = compile_file(path, &options, &crate::fs::real_files());
    if let Some(table) = compiled.table.take() {
        return Ok(table);
    }
    eprint!("{}", render(&[report(path, compiled)], Format::Human));
    eprintln!(
        "crumb {command}: {} is not a valid pipeline (see `crumb validate`); nothing was done",
        path.display()
    );
    Err(INVALID_PIPELINE)
}
