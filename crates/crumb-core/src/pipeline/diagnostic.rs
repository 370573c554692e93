//! One problem found in a pipeline or preset file, with a stable code and a location.
//!
//! The code is the contract: tools and people match on `crumb::unknown-role`, never on the
//! wording, and `crumb explain <code>` says what it means and how to fix it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::pipeline::codes::{Code, Level};
use crate::pipeline::located_yaml::Span;

/// A located, coded problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{file}:{line}:{col}: {level} [{code}] {message}", file = .file.display(), line = .span.map_or(0, |s| s.line), col = .span.map_or(0, |s| s.col), level = .level.as_str())]
pub struct Diagnostic {
    /// Stable identifier, e.g. `crumb::unknown-role`.
    pub code: &'static str,
    #[serde(rename = "severity")]
    pub level: Level,
    /// One sentence saying what is wrong.
    pub message: String,
    /// The file as it was named on the command line (or found in a folder).
    pub file: PathBuf,
    /// Where in the file; `None` for problems with the file as a whole.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    /// Short text shown under the caret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// How to fix it, e.g. a "did you mean".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A diagnostic of `code` (whose level it takes) about `file`.
    pub fn new(code: &Code, file: &Path, message: impl Into<String>) -> Self {
        Diagnostic {
            code: code.name,
            level: code.level,
            message: message.into(),
            file: file.to_path_buf(),
            span: None,
            label: None,
            hint: None,
        }
    }

    #[must_use]
    pub fn at(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    #[must_use]
    pub(crate) fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    pub fn is_error(&self) -> bool {
        self.level == Level::Error
    }
}
