//! Diagnostic output: human (caret snippets), JSON, and GitHub workflow commands.
//!
//! All three are plain text with no colour and no terminal probing, so they are byte-stable for
//! snapshot tests and CI logs.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::pipeline::codes::Level;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::located_yaml::Span;

/// Output format of `crumb validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Github,
}

/// The outcome of validating one file.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub file: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
    /// Texts of the files diagnostics point into.
    pub sources: Vec<(PathBuf, String)>,
}

/// Longest source line shown in full; longer lines are cut around the caret.
const MAX_SNIPPET_CHARS: usize = 120;

/// Render every report in `format`.
pub fn render(reports: &[FileReport], format: Format) -> String {
    match format {
        Format::Human => human(reports),
        Format::Json => json(reports),
        Format::Github => github(reports),
    }
}

/// Count errors and warnings over all reports.
pub fn totals(reports: &[FileReport]) -> (usize, usize) {
    let all = reports.iter().flat_map(|r| &r.diagnostics);
    let errors = all.clone().filter(|d| d.level == Level::Error).count();
    (errors, all.count() - errors)
}

fn human(reports: &[FileReport]) -> String {
    let mut out = String::new();
    for report in reports {
        if report.diagnostics.is_empty() {
            let _ = writeln!(out, "ok: {}", report.file.display());
            continue;
        }
        for diagnostic in &report.diagnostics {
            let source = report
                .sources
                .iter()
                .find(|(path, _)| path == &diagnostic.file)
                .map(|(_, text)| text.as_str());
            human_one(&mut out, diagnostic, source);
            out.push('\n');
        }
    }
    out
}

fn human_one(out: &mut String, d: &Diagnostic, source: Option<&str>) {
    let _ = writeln!(out, "{}[{}]: {}", d.level.as_str(), d.code, d.message);
    let location = match d.span {
        Some(span) => format!("{}:{}:{}", d.file.display(), span.line, span.col),
        None => d.file.display().to_string(),
    };
    let snippet = d
        .span
        .zip(source)
        .and_then(|(span, text)| snippet_line(text, span));
    let gutter = d.span.map_or(1, |s| s.line.to_string().len());
    let pad = " ".repeat(gutter);
    let _ = writeln!(out, "{pad}--> {location}");
    if let (Some((line_text, caret_col, caret_len)), Some(span)) = (snippet, d.span) {
        let _ = writeln!(out, "{pad} |");
        let _ = writeln!(out, "{} | {line_text}", span.line);
        let label = d
            .label
            .as_deref()
            .map(|l| format!(" {l}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{pad} | {}{}{label}",
            " ".repeat(caret_col),
            "^".repeat(caret_len)
        );
    }
    if let Some(hint) = &d.hint {
        let _ = writeln!(out, "{pad} = help: {hint}");
    }
}

/// The source line of `span` (control characters shown as spaces, cut to a window around the caret), the
/// caret's 0-based column in that text, and how many carets to draw.
fn snippet_line(text: &str, span: Span) -> Option<(String, usize, usize)> {
    let index = usize::try_from(span.line).ok()?.checked_sub(1)?;
    let line = text.lines().nth(index)?;
    // Tabs and other control characters are shown as one space so carets line up and nothing
    // raw reaches the terminal.
    let chars: Vec<char> = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let col = usize::try_from(span.col)
        .unwrap_or(1)
        .saturating_sub(1)
        .min(chars.len());
    let len = usize::try_from(span.len)
        .unwrap_or(1)
        .clamp(1, (chars.len() - col).max(1));
    if chars.len() <= MAX_SNIPPET_CHARS {
        let shown: String = chars.iter().collect();
        return Some((shown.trim_end().to_string(), col, len));
    }
    let start = col.saturating_sub(MAX_SNIPPET_CHARS / 2);
    let end = (start + MAX_SNIPPET_CHARS).min(chars.len());
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    let caret = col - start + usize::from(start > 0);
    Some((shown, caret, len.min(end.saturating_sub(col)).max(1)))
}

#[derive(Serialize)]
struct JsonReport<'a> {
    files: Vec<JsonFile<'a>>,
    errors: usize,
    warnings: usize,
}

#[derive(Serialize)]
struct JsonFile<'a> {
    file: &'a Path,
    ok: bool,
    diagnostics: &'a [Diagnostic],
}

fn json(reports: &[FileReport]) -> String {
    let (errors, warnings) = totals(reports);
    let report = JsonReport {
        files: reports
            .iter()
            .map(|r| JsonFile {
                file: &r.file,
                ok: !r.diagnostics.iter().any(Diagnostic::is_error),
                diagnostics: &r.diagnostics,
            })
            .collect(),
        errors,
        warnings,
    };
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

fn github(reports: &[FileReport]) -> String {
    let mut out = String::new();
    for d in reports.iter().flat_map(|r| &r.diagnostics) {
        let command = match d.level {
            Level::Error => "error",
            Level::Warning => "warning",
        };
        let mut properties = format!("file={}", escape_property(&d.file.display().to_string()));
        if let Some(span) = d.span {
            let _ = write!(properties, ",line={},col={}", span.line, span.col);
        }
        let _ = write!(properties, ",title={}", escape_property(d.code));
        let mut message = d.message.clone();
        if let Some(hint) = &d.hint {
            let _ = write!(message, " ({hint})");
        }
        let _ = writeln!(out, "::{command} {properties}::{}", escape_data(&message));
    }
    out
}

/// Escaping for a workflow command's message part.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escaping for a workflow command's `key=value` properties.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}
