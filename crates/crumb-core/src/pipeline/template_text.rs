//! A template's text as the checks and the renderer read it: bounded and UTF-8 through the
//! compiler's [`SourceFiles`], and a minijinja error located in it by line and column.

use std::path::Path;

use crate::pipeline::located_yaml::Span;
use crate::pipeline::source::{ReadError, SourceFiles};

/// Largest template read (prompts are a few KB).
const MAX_TEMPLATE_BYTES: u64 = 1024 * 1024;

/// A template that could not be read, with where in it the problem is when it has a place (the
/// first byte that is not UTF-8).
#[derive(Debug)]
pub(crate) struct ReadFailure {
    pub(crate) message: String,
    pub(crate) span: Option<Span>,
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Read a template through `files` (no FIFO, device or oversized file).
pub(crate) fn read_limited(files: &dyn SourceFiles, path: &Path) -> Result<String, ReadFailure> {
    let unlocated = |message| ReadFailure {
        message,
        span: None,
    };
    let bytes = files.read(path, MAX_TEMPLATE_BYTES).map_err(|e| match e {
        ReadError::TooLarge { .. } => unlocated(format!(
            "template is larger than the limit of {MAX_TEMPLATE_BYTES} bytes"
        )),
        other => unlocated(format!("cannot read template: {other}")),
    })?;
    String::from_utf8(bytes).map_err(|err| {
        let at = err.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&err.as_bytes()[..at]);
        let line = text.matches('\n').count() + 1;
        let col = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ReadFailure {
            message: format!("template is not valid UTF-8 (byte {at})"),
            span: Some(Span {
                line: u32::try_from(line).unwrap_or(u32::MAX),
                col: u32::try_from(col).unwrap_or(u32::MAX),
                len: 1,
                file: 0,
            }),
        }
    })
}

/// Where in `text` a minijinja error happened, and what it says.
pub(crate) fn located(err: &minijinja::Error, text: &str) -> (Option<Span>, String) {
    let span = err
        .range()
        .map(|r| span_of(text, r.start, r.end))
        .or_else(|| {
            err.line().map(|line| Span {
                line: u32::try_from(line).unwrap_or(u32::MAX),
                col: 1,
                len: 1,
                file: 0,
            })
        });
    let detail = err
        .detail()
        .map_or_else(|| err.kind().to_string(), str::to_string);
    (span, detail)
}

/// Line/column span of a byte range.
pub(crate) fn span_of(text: &str, start: usize, end: usize) -> Span {
    let start = floor_char_boundary(text, start.min(text.len()));
    let end = floor_char_boundary(text, end.min(text.len()).max(start));
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = text[line_start..start].chars().count() + 1;
    let len = text[start..end]
        .lines()
        .next()
        .map_or(1, |l| l.chars().count())
        .max(1);
    Span {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        col: u32::try_from(col).unwrap_or(u32::MAX),
        len: u32::try_from(len).unwrap_or(1),
        file: 0,
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
