//! `crumb export <session> --format html|chrome-trace|otlp-json|md`: a session for someone
//! without crumb — a self-contained HTML report, a Chrome trace (Perfetto), OTLP JSON spans
//! (OpenTelemetry `GenAI` conventions) or a Markdown summary — on stdout or into `--output`.

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

/// The export of `session` in `format`, as text.
pub(crate) fn render(
    session: &export::Loaded,
    format: Format,
) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Html => export::html::report(session),
        Format::Md => export::markdown::summary(session),
        Format::ChromeTrace => serde_json::to_string(&export::chrome_trace::trace(session))?,
        Format::OtlpJson => serde_json::to_string(&export::otlp::request(session))?,
    })
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.home.as_deref()).map_err(|_| {
        CommandError::usage("no crumb home: set CRUMB_HOME or HOME, or pass --home")
    })?;
    let project = Project::current().ok();
    let dir = resolve(&home, project.as_ref(), &args.session)?;
    let session = export::load(&dir).map_err(CommandError::usage)?;
    let text = render(&session, args.format).map_err(CommandError::failure_from)?;
    if let Some(path) = &args.output {
        std::fs::write(path, text).map_err(|e| {
            CommandError::failure(format!("cannot write {}", path.display())).because(e)
        })?;
    } else {
        super::stdout::print(text)?;
    }
    Ok(ExitStatus::SUCCESS)
}
