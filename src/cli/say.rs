//! `crumb say <session> <line>`: check one inbox line against the session's roles and append it.
//!
//! The roles come from the session's `meta.json`, written from its frozen pipeline when the
//! session was created, so validation matches what the coordinator will accept without
//! recompiling the pipeline. Exit `SUCCESS` when appended, `USAGE_ERROR` when the line or the
//! session is rejected.

use super::error::{CommandError, ExitStatus};
use crate::home::{CrumbHome, Project};
use crate::runtime::inbox::{append_line, parse_line};
use crate::runtime::lock;
use crate::runtime::meta::SessionStatus;
use crate::runtime::resolve::resolve;
use crate::runtime::session_dir::SessionDir;

/// Arguments of `crumb say`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Session: a ULID, a unique prefix of one, or a path to a session folder or its transcript.
    pub session: String,
    /// The line: `/approve`, `/veto <reason>`, `@builder <message>`, plain text, … (words are
    /// joined with spaces).
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true, trailing_var_arg = true)]
    pub line: Vec<String>,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let message = say(args)?;
    super::stdout::print(format!("{message}\n"))?;
    Ok(ExitStatus::SUCCESS)
}

/// Every refusal of `say` is a usage error: the session, its meta or the line as given.
fn say(args: &Args) -> Result<String, CommandError> {
    let line = args.line.join(" ");
    let home = CrumbHome::from_env()?;
    let project = Project::current().ok();
    let session = resolve(&home, project.as_ref(), &args.session)?;
    if let Some(note) = send(&session, &line)? {
        eprintln!("crumb say: note: {note}");
    }
    Ok(format!("sent to {}", session.id()))
}

/// Check `line` against the session's roles and append it to its inbox: what `crumb say` and
/// `crumb watch` send. Answers with a note when the line cannot act yet (the session is done, or
/// no coordinator runs).
pub(crate) fn send(session: &SessionDir, line: &str) -> Result<Option<String>, CommandError> {
    let meta = session.read_meta().map_err(CommandError::usage_from)?;
    match parse_line(line, &meta.roles) {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Err(CommandError::usage(
                "nothing to say: the line is blank or a comment",
            ));
        }
        Err(err) => return Err(CommandError::usage_from(err)),
    }
    append_line(&session.inbox(), line.trim()).map_err(CommandError::usage_from)?;
    Ok(if meta.status == SessionStatus::Done {
        Some(format!(
            "session {} is done; the line is recorded but changes nothing",
            session.id()
        ))
    } else if lock::is_held(session.path()) {
        None
    } else {
        Some(format!(
            "no coordinator is running for {}; the line applies on `crumb resume {}`",
            session.id(),
            session.id()
        ))
    })
}
