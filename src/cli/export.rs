//! `crumb export <session> --format html|chrome-trace|otlp-json|md`: a session for someone
//! without crumb — a self-contained HTML report, a Chrome trace (Perfetto), OTLP JSON spans
//! (OpenTelemetry `GenAI` conventions) or a Markdown summary — on stdout or into `--output`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit_codes::{FAILURE, SUCCESS, USAGE_ERROR, exit};
use crate::export;
use crate::runtime::home::Project;
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

pub fn run(args: &Args) -> ExitCode {
    match execute(args) {
        Ok(()) => exit(SUCCESS),
        Err((code, message)) => {
            eprintln!("crumb export: {message}");
            exit(code)
        }
    }
}

/// The export of `session` in `format`, as text.
pub fn render(session: &export::Loaded, format: Format) -> Result<String, String> {
    Ok(match format {
        Format::Html => export::html::report(session),
        Format::Md => export::markdown::summary(session),
        Format::ChromeTrace => serde_json::to_string(&export::chrome_trace::trace(session))
            .map_err(|e| e.to_string())?,
        Format::OtlpJson => {
            serde_json::to_string(&export::otlp::request(session)).map_err(|e| e.to_string())?
        }
    })
}

fn execute(args: &Args) -> Result<(), (u8, String)> {
    let home = super::run::home(args.home.as_deref()).map_err(|_| {
        (
            USAGE_ERROR,
            "no crumb home: set CRUMB_HOME or HOME, or pass --home".to_owned(),
        )
    })?;
    let project = Project::current().ok();
    let dir = resolve(&home, project.as_ref(), &args.session)
        .map_err(|e| (USAGE_ERROR, e.to_string()))?;
    let session = export::load(&dir).map_err(|e| (USAGE_ERROR, e))?;
    let text = render(&session, args.format).map_err(|e| (FAILURE, e))?;
    if let Some(path) = &args.output {
        std::fs::write(path, text)
            .map_err(|e| (FAILURE, format!("cannot write {}: {e}", path.display())))
    } else {
        {
            use std::io::Write as _;
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err((FAILURE, format!("cannot write stdout: {e}")))
                }
                _ => Ok(()),
            }
        }
    }
}
