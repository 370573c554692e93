//! The one error type of every `crumb` command. A command returns
//! `Result<ExitStatus, CommandError>` and carries its errors up with `?`; only
//! [`crate::cli::main`] prints them (`crumb <cmd>: <message>`, then one `hint:` line per hint) and
//! turns them into the process exit, so every message has one shape and every code comes from
//! [`crate::exit_codes`].

use std::fmt;

use crate::exit_codes::{FAILURE, INVALID_PIPELINE, SUCCESS, USAGE_ERROR};

/// A source error of any library type, kept whole (`Error::source` reaches it).
type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How a command that did what it was asked ends. Not an error: a session that ended FAILED or
/// PARTIAL, or a batch where not all passed, exits with the outcome's code and prints nothing
/// more, since the summary already said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus(u8);

impl ExitStatus {
    /// [`SUCCESS`].
    pub const SUCCESS: ExitStatus = ExitStatus(SUCCESS);

    /// The code of an outcome (`Ending::exit_code`, a batch's verdict): one of
    /// [`crate::exit_codes`].
    pub fn outcome(code: u8) -> Self {
        ExitStatus(code)
    }

    /// The process exit code.
    #[must_use]
    pub(crate) fn code(self) -> u8 {
        self.0
    }
}

/// Which kind of failure, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// [`USAGE_ERROR`]: the request cannot be carried out as given (a path, session, input or
    /// environment that does not resolve, a refusal).
    Usage,
    /// [`FAILURE`]: the answer is no (a malformed event, a failed check) or crumb itself failed.
    Failure,
    /// [`INVALID_PIPELINE`]: the pipeline (or preset) has errors.
    InvalidPipeline,
}

impl ErrorKind {
    /// The process exit code of this kind.
    #[must_use]
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Usage => USAGE_ERROR,
            ErrorKind::Failure => FAILURE,
            ErrorKind::InvalidPipeline => INVALID_PIPELINE,
        }
    }
}

/// Why a command stopped: its kind (the exit code), what it was doing (`context`), the error
/// that stopped it (`source`, its type kept), and what the person can do about it (`hints`).
/// With neither context nor source the error is already reported (validate's diagnostics, a
/// check's violations) and only its code is left to give.
#[derive(Debug)]
pub struct CommandError {
    kind: ErrorKind,
    context: Option<String>,
    source: Option<Source>,
    hints: Vec<String>,
}

impl CommandError {
    fn new(kind: ErrorKind, context: impl Into<String>) -> Self {
        CommandError {
            kind,
            context: Some(context.into()),
            source: None,
            hints: Vec::new(),
        }
    }

    /// A [`ErrorKind::Usage`] error saying `message`.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        CommandError::new(ErrorKind::Usage, message)
    }

    /// A [`ErrorKind::Failure`] error saying `message`.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        CommandError::new(ErrorKind::Failure, message)
    }

    /// An [`ErrorKind::InvalidPipeline`] error saying `message`.
    pub(crate) fn invalid_pipeline(message: impl Into<String>) -> Self {
        CommandError::new(ErrorKind::InvalidPipeline, message)
    }

    /// The command printed its full report already; exit with `kind`'s code, printing nothing.
    pub(crate) fn reported(kind: ErrorKind) -> Self {
        CommandError {
            kind,
            context: None,
            source: None,
            hints: Vec::new(),
        }
    }

    /// `source` as an error of `kind`, its message the source's own.
    fn from_source(kind: ErrorKind, source: impl Into<Source>) -> Self {
        CommandError {
            kind,
            context: None,
            source: Some(source.into()),
            hints: Vec::new(),
        }
    }

    /// A [`ErrorKind::Usage`] error from `source`, for use in `map_err`:
    /// `map_err(CommandError::usage_from)`.
    pub(crate) fn usage_from(source: impl Into<Source>) -> Self {
        CommandError::from_source(ErrorKind::Usage, source)
    }

    /// A [`ErrorKind::Failure`] error from `source`, for use in `map_err`.
    pub(crate) fn failure_from(source: impl Into<Source>) -> Self {
        CommandError::from_source(ErrorKind::Failure, source)
    }

    /// Keep `source` as the cause: the message becomes `<context>: <source>`.
    #[must_use]
    pub(crate) fn because(mut self, source: impl Into<Source>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Add a `hint:` line: what the person can do next.
    #[must_use]
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// The process exit code: [`ErrorKind::exit_code`].
    #[must_use]
    pub(crate) fn exit_code(&self) -> u8 {
        self.kind.exit_code()
    }

    /// What `main` prints to stderr for `crumb <command>`: the message line and the hint lines;
    /// nothing for an error already reported.
    #[must_use]
    pub(crate) fn render(&self, command: &str) -> String {
        if self.context.is_none() && self.source.is_none() {
            return String::new();
        }
        let mut text = format!("crumb {command}: {self}\n");
        for hint in &self.hints {
            text.push_str("hint: ");
            text.push_str(hint);
            text.push('\n');
        }
        text
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.context, &self.source) {
            (Some(context), Some(source)) => write!(f, "{context}: {source}"),
            (Some(context), None) => f.write_str(context),
            (None, Some(source)) => write!(f, "{source}"),
            (None, None) => f.write_str("(already reported)"),
        }
    }
}

impl std::error::Error for CommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}

/// The library errors commands meet, each with the kind it always has.
macro_rules! from_library_errors {
    ($($kind:ident: $($error:ty),+;)*) => {
        $($(
            impl From<$error> for CommandError {
                fn from(error: $error) -> Self {
                    CommandError::from_source(ErrorKind::$kind, error)
                }
            }
        )+)*
    };
}

from_library_errors! {
    // A home, a binding or a lock that does not resolve is the request as given.
    Usage: crate::home::NoHome,
        crate::runtime::bindings::BindingError,
        crate::runtime::lock::LockError,
        crate::runtime::fork::ForkError;
    // A session folder that cannot be built, read or written is crumb failing.
    Failure: crate::runtime::session::SessionError,
        crate::runtime::meta::MetaError,
        crate::runtime::session_read::OpenError;
}

/// A `<session>` argument that names no session is the request as given; the hint says where
/// the ids are.
impl From<crate::runtime::resolve::ResolveError> for CommandError {
    fn from(error: crate::runtime::resolve::ResolveError) -> Self {
        use crate::runtime::resolve::ResolveError;
        let hint = matches!(
            error,
            ResolveError::Invalid { .. } | ResolveError::NotFound { .. }
        )
        .then_some("`crumb ls` lists this project's sessions (`--all-projects` every project's)");
        let error = CommandError::from_source(ErrorKind::Usage, error);
        match hint {
            Some(hint) => error.hint(hint),
            None => error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_context_then_source_then_hints() {
        let io = std::io::Error::other("disk full");
        let error = CommandError::failure("cannot write")
            .because(io)
            .hint("free some space");
        assert_eq!(error.exit_code(), FAILURE);
        assert_eq!(
            error.render("ls"),
            "crumb ls: cannot write: disk full\nhint: free some space\n"
        );
        assert_eq!(
            std::error::Error::source(&error).map(ToString::to_string),
            Some("disk full".to_owned())
        );
    }

    #[test]
    fn a_reported_error_prints_nothing_and_keeps_its_code() {
        let error = CommandError::reported(ErrorKind::InvalidPipeline);
        assert_eq!(error.render("validate"), "");
        assert_eq!(error.exit_code(), INVALID_PIPELINE);
    }
}
