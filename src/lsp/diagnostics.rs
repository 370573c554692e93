//! `crumb validate`'s report as LSP diagnostics: the same codes, messages, severities and
//! places, grouped by the file each points into (a template's error is shown in the template),
//! each code linked to its `crumb explain` text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crumb_core::pipeline::codes::{self, Level};
use crumb_core::pipeline::diagnostic::Diagnostic;
use crumb_core::pipeline::diagnostic_render::FileReport;
use lsp_types::{
    CodeDescription, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString,
    Position, Range, Uri,
};
use serde_json::json;

use super::outline::{NameKind, Outline};
use super::position::Lines;
use super::uri::{from_path, normalize};

/// What the diagnostics of `crumb validate` carry in `source`.
pub(crate) const SOURCE: &str = "crumb";

/// Where a hint starts in a diagnostic's message (validate's human format writes it the same way).
pub(crate) const HELP: &str = "\n= help: ";

/// The report's diagnostics by the (normalised) file they point into; `file` itself is always
/// present, empty when clean.
pub(crate) fn by_file(
    file: &Path,
    report: &FileReport,
    text_of: impl Fn(&Path) -> Option<String>,
) -> BTreeMap<PathBuf, Vec<lsp_types::Diagnostic>> {
    let mut out: BTreeMap<PathBuf, Vec<lsp_types::Diagnostic>> = BTreeMap::new();
    out.insert(normalize(file), Vec::new());
    for diagnostic in &report.diagnostics {
        let path = normalize(&diagnostic.file);
        let text = report
            .sources
            .iter()
            .find(|(p, _)| p == &diagnostic.file)
            .map(|(_, t)| t.clone())
            .or_else(|| text_of(&path))
            .unwrap_or_default();
        let converted = convert(diagnostic, &path, &text);
        out.entry(path).or_default().push(converted);
    }
    out
}

/// One diagnostic, placed in `text` (the file it points into).
pub(crate) fn convert(d: &Diagnostic, path: &Path, text: &str) -> lsp_types::Diagnostic {
    let lines = Lines::new(text);
    let range = d
        .span
        .map_or_else(Range::default, |span| lines.span_range(span));
    let mut message = d.message.clone();
    if let Some(hint) = &d.hint {
        message.push_str(HELP);
        message.push_str(hint);
    }
    let explain = codes::find(d.code).map(codes::Code::explanation);
    lsp_types::Diagnostic {
        range,
        severity: Some(severity(d.level)),
        code: Some(NumberOrString::String(d.code.to_owned())),
        code_description: explain_uri(d.code).map(|href| CodeDescription { href }),
        source: Some(SOURCE.to_owned()),
        message,
        related_information: related(d, path, text),
        tags: None,
        data: Some(json!({ "label": d.label, "hint": d.hint, "explain": explain })),
    }
}

pub(crate) fn severity(level: Level) -> DiagnosticSeverity {
    match level {
        Level::Error => DiagnosticSeverity::ERROR,
        Level::Warning => DiagnosticSeverity::WARNING,
    }
}

/// `crumb explain <code>` as a URI the client can show (the text itself is in the
/// diagnostic's `data.explain` and in the hover over the code).
pub(crate) fn explain_uri(code: &str) -> Option<Uri> {
    Uri::from_str(&format!("crumb-explain:{code}")).ok()
}

/// The places a diagnostic is about besides its own: the roles a route's unknown role could
/// have been, the routes of a cycle (each route whose role the loop names).
fn related(d: &Diagnostic, path: &Path, text: &str) -> Option<Vec<DiagnosticRelatedInformation>> {
    if !matches!(d.code, "crumb::unknown-role" | "crumb::unbounded-loop") {
        return None;
    }
    let uri = from_path(path)?;
    let outline = Outline::parse(text)?;
    let lines = Lines::new(text);
    let location = |bytes: std::ops::Range<usize>, message: String| DiagnosticRelatedInformation {
        location: Location::new(uri.clone(), lines.range(bytes)),
        message,
    };
    let found: Vec<_> = match d.code {
        "crumb::unknown-role" => outline
            .mentions
            .iter()
            .filter(|m| m.declares && m.kind == NameKind::Role)
            .map(|m| {
                location(
                    m.bytes.clone(),
                    format!("role `{}` is declared here", m.name),
                )
            })
            .collect(),
        "crumb::unbounded-loop" => {
            let words: Vec<&str> = d
                .message
                .trim_start_matches("unbounded loop: ")
                .split(" → ")
                .collect();
            outline
                .mentions
                .iter()
                .filter(|m| {
                    !m.declares && m.kind == NameKind::Role && words.contains(&m.name.as_str())
                })
                .map(|m| {
                    location(
                        m.bytes.clone(),
                        format!("a route of the cycle spawns `{}`", m.name),
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    };
    (!found.is_empty()).then_some(found)
}

/// An empty range at the start of a file, for findings about a file as a whole.
pub(crate) fn file_start() -> Range {
    Range::new(Position::new(0, 0), Position::new(0, 0))
}
