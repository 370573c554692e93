//! Quick fixes for what `crumb validate` found: the "did you mean" it already computed, the
//! verdict cells no route covers (new routes that ask a person), and a `max:` on a route that
//! closes an unbounded loop.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use lsp_types::{
    CodeAction, CodeActionKind, Diagnostic, NumberOrString, Position, Range, TextEdit, Uri,
    WorkspaceEdit,
};

use super::diagnostics::HELP;
use super::position::Lines;

/// How many more firings a new `max:` allows: a small bound to raise, not a guess at the need.
const DEFAULT_MAX: u32 = 3;

#[allow(
    clippy::mutable_key_type,
    reason = "lsp-types keys a WorkspaceEdit's changes by Uri"
)]
pub(crate) fn actions(uri: &Uri, text: &str, diagnostics: &[Diagnostic]) -> Vec<CodeAction> {
    let lines = Lines::new(text);
    diagnostics
        .iter()
        .filter_map(|d| {
            let NumberOrString::String(code) = d.code.as_ref()? else {
                return None;
            };
            let (title, edit) = match code.as_str() {
                "crumb::unrouted-verdict" => missing_cells(&lines, d)?,
                "crumb::unbounded-loop" => add_max(&lines, d),
                _ => did_you_mean(&lines, text, d)?,
            };
            Some(CodeAction {
                title,
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![d.clone()]),
                edit: Some(WorkspaceEdit::new(HashMap::from([(
                    uri.clone(),
                    vec![edit],
                )]))),
                is_preferred: Some(true),
                ..CodeAction::default()
            })
        })
        .collect()
}

fn did_you_mean(lines: &Lines<'_>, text: &str, d: &Diagnostic) -> Option<(String, TextEdit)> {
    let hint = d.message.split_once(HELP)?.1;
    let name = hint.split_once("did you mean `")?.1.split_once('`')?.0;
    let start = lines.offset(d.range.start);
    let end = lines.offset(d.range.end);
    let wrong = text.get(start..end)?;
    let word = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if wrong.is_empty() || !wrong.chars().all(word) || wrong == name {
        return None;
    }
    Some((
        format!("Change `{wrong}` to `{name}`"),
        TextEdit::new(d.range, name.to_owned()),
    ))
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The first line after `line` that is not inside the block (or list item) `line` starts.
fn block_end(lines: &Lines<'_>, line: u32) -> u32 {
    let base = indent(lines.line(line as usize));
    let mut next = line + 1;
    loop {
        let text = lines.line(next as usize);
        let blank = text.trim().is_empty() || text.trim_start().starts_with('#');
        if lines.offset(Position::new(next, 0)) >= lines.offset(Position::new(u32::MAX, 0)) {
            return next;
        }
        if !blank && indent(text) <= base {
            return next;
        }
        next += 1;
    }
}

fn missing_cells(lines: &Lines<'_>, d: &Diagnostic) -> Option<(String, TextEdit)> {
    let listed = d.message.split(HELP).next()?.split_once("no route: ")?.1;
    let mut by_verdict: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for cell in listed.split(", ") {
        let (verdict, severity) = cell.trim().split_once('×')?;
        by_verdict.entry(verdict).or_default().push(severity);
    }
    let line = d.range.start.line;
    let at = lines.line(line as usize);
    let pad = " ".repeat(indent(at));
    let item = if at.trim_start().starts_with("- ") {
        "- "
    } else {
        "  - "
    };
    let mut inserted = String::new();
    for (verdict, severities) in &by_verdict {
        let _ = writeln!(
            inserted,
            "{pad}{item}{{ on: verdict, when: {{ verdict: {verdict}, severity: [{}] }}, await: human }}",
            severities.join(", ")
        );
    }
    let end = block_end(lines, line);
    let mut position = Position::new(end, 0);
    if lines.offset(position) == lines.offset(Position::new(u32::MAX, 0))
        && !lines.line(end.saturating_sub(1) as usize).is_empty()
    {
        inserted.insert(0, '\n');
        position = lines.position(usize::MAX);
    }
    let count: usize = by_verdict.values().map(Vec::len).sum();
    Some((
        format!("Add routes for the {count} missing verdict cell(s) (a person decides)"),
        TextEdit::new(Range::new(position, position), inserted),
    ))
}

fn add_max(lines: &Lines<'_>, d: &Diagnostic) -> (String, TextEdit) {
    let line = d.range.start.line;
    let text = lines.line(line as usize);
    let title = format!("Add `max: {DEFAULT_MAX}` to this route");
    if let Some(close) = text.rfind('}') {
        let before = text[..close].trim_end();
        let position = lines.position(lines.offset(Position::new(line, 0)) + before.len());
        let insert = if before.ends_with('{') {
            " max: 3"
        } else {
            ", max: 3"
        };
        let insert = insert.replace('3', &DEFAULT_MAX.to_string());
        return (title, TextEdit::new(Range::new(position, position), insert));
    }
    let content = indent(text)
        + if text.trim_start().starts_with("- ") {
            2
        } else {
            0
        };
    let position = Position::new(line + 1, 0);
    let max = format!("{}max: {DEFAULT_MAX}\n", " ".repeat(content));
    (title, TextEdit::new(Range::new(position, position), max))
}
