//! `crumb export <session> --format html|chrome-trace|otlp-json|md`: a session for someone
//! without crumb — a self-contained HTML report, a Chrome trace (Perfetto), OTLP JSON spans
//! (OpenTelemetry `GenAI` conventions) or a Markdown summary — on stdout or into `--output`.

use std::io::Write;
use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use crate::export;
use crate::home::Project;
use crate::runtime::resolve::resolve;

/// The formats `crumb export` writes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Html,
    ChromeTrace,
    OtlpJson,
    Md,
}

/// Arguments of `crumb export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A session id, a unique prefix of one, or a session folder.
    pub session: String,
    #[arg(long, value_enum)]
    pub format: Format,
    /// Write here instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The crumb home (default `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

/// Write the export of `session` in `format` to `out`. The JSON formats are made one span at a
/// time as they are written, so a long session's export is never held whole in memory.
pub(crate) fn write(
    session: &export::Loaded,
    format: Format,
    out: &mut impl Write,
) -> std::io::Result<()> {
    match format {
        Format::Html => out.write_all(export::html::report(session).as_bytes()),
        Format::Md => out.write_all(export::markdown::summary(session).as_bytes()),
        Format::ChromeTrace => {
            serde_json::to_writer(&mut *out, &export::chrome_trace::trace(session)).map_err(io)
        }
        Format::OtlpJson => {
            serde_json::to_writer(&mut *out, &export::otlp::request(session)).map_err(io)
        }
    }
}

/// A serialiser's error as the I/O error it carries (a closed pipe stays one).
fn io(err: serde_json::Error) -> std::io::Error {
    match err.io_error_kind() {
        Some(kind) => std::io::Error::new(kind, err),
        None => std::io::Error::other(err),
    }
}

/// The export of `session` in `format`, as text.
#[cfg(test)]
pub(crate) fn render(session: &export::Loaded, format: Format) -> std::io::Result<String> {
    let mut out = Vec::new();
    write(session, format, &mut out)?;
    String::from_utf8(out).map_err(std::io::Error::other)
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.home.as_deref()).map_err(|_| {
        CommandError::usage("no crumb home: set CRUMB_HOME or HOME, or pass --home")
    })?;
    let project = Project::current().ok();
    let dir = resolve(&home, project.as_ref(), &args.session)?;
    let session = export::load(&dir).map_err(CommandError::usage)?;
    if let Some(path) = &args.output {
        let written = std::fs::File::create(path).and_then(|file| {
            let mut out = std::io::BufWriter::with_capacity(256 * 1024, file);
            write(&session, args.format, &mut out)?;
            out.flush()
        });
        written.map_err(|e| {
            CommandError::failure(format!("cannot write {}", path.display())).because(e)
        })?;
    } else {
        let stdout = std::io::stdout().lock();
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, stdout);
        match write(&session, args.format, &mut out).and_then(|()| out.flush()) {
            // A closed pipe (`crumb export … | head`) is not an error: the reader has what it wanted.
            Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(CommandError::failure("cannot write").because(err));
            }
            _ => {}
        }
    }
    Ok(ExitStatus::SUCCESS)
}
