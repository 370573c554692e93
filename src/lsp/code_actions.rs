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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crumb_core::pipeline::compile::{CompileOptions, compile_str};
    use crumb_core::pipeline::source::InMemory;
    use lsp_types::Uri;

    use super::*;
    use crate::lsp::diagnostics::convert;

    fn diagnostics(text: &str) -> Vec<Diagnostic> {
        let options = CompileOptions {
            check_templates: false,
        };
        let path = Path::new("/p/pipelines/t.yaml");
        compile_str(text, path, &options, &InMemory::new().shared())
            .diagnostics
            .iter()
            .map(|d| convert(d, path, text))
            .collect()
    }

    /// The text after the one action fixing `code`, which must then be gone.
    fn fixed(text: &str, code: &str) -> String {
        let uri: Uri = "file:///p/pipelines/t.yaml".parse().unwrap();
        let found = diagnostics(text);
        let actions = actions(&uri, text, &found);
        let action = actions
            .iter()
            .find(|a| {
                a.diagnostics.as_ref().unwrap()[0].code == Some(NumberOrString::String(code.into()))
            })
            .unwrap_or_else(|| panic!("no action for {code} in {actions:?}"));
        let edits = &action.edit.as_ref().unwrap().changes.as_ref().unwrap()[&uri];
        let lines = Lines::new(text);
        let mut out = text.to_owned();
        let mut ranges: Vec<_> = edits
            .iter()
            .map(|e| {
                (
                    lines.offset(e.range.start),
                    lines.offset(e.range.end),
                    &e.new_text,
                )
            })
            .collect();
        ranges.sort_by_key(|r| std::cmp::Reverse(r.0));
        for (start, end, new) in ranges {
            out.replace_range(start..end, new);
        }
        let left: Vec<_> = diagnostics(&out)
            .into_iter()
            .filter(|d| d.code == Some(NumberOrString::String(code.into())))
            .collect();
        assert!(
            left.is_empty(),
            "{code} still there after the fix:\n{out}\n{left:?}"
        );
        out
    }

    const HEAD: &str = "version: 1\nname: t\nroles:\n  writer: { template: w.j2, produces: [build, note] }\n  judge: { template: j.j2, produces: [judge.score] }\n  looper: { template: w.j2, produces: [note] }\n";

    #[test]
    fn the_missing_verdict_cells_get_routes() {
        let text = format!(
            "{HEAD}routes:\n  - {{ on: goal, spawn: writer }}\n  - {{ on: build, spawn: judge }}\n  - {{ on: note, done: pass }}\n  - {{ on: verdict, when: {{ verdict: PASS }}, done: pass }}\n  - {{ on: user.approve, done: pass }}\n"
        );
        let out = fixed(&text, "crumb::unrouted-verdict");
        assert!(
            out.contains(
                "when: { verdict: FAIL, severity: [Critical, Important, Minor] }, await: human"
            ),
            "{out}"
        );
    }

    #[test]
    fn an_unbounded_loop_gets_a_max_in_flow_and_block_style() {
        let flow = format!(
            "{HEAD}routes:\n  - {{ on: goal, spawn: writer }}\n  - {{ on: note, spawn: looper }}\n  - {{ on: build, done: {{ outcome: pass, reason: built }} }}\n"
        );
        assert!(fixed(&flow, "crumb::unbounded-loop").contains("spawn: looper, max: 3 }"));
        let block = format!(
            "{HEAD}routes:\n  - {{ on: goal, spawn: writer }}\n  - on: note\n    spawn: looper\n  - {{ on: build, done: {{ outcome: pass, reason: built }} }}\n"
        );
        assert!(
            fixed(&block, "crumb::unbounded-loop")
                .contains("  - on: note\n    max: 3\n    spawn: looper\n")
        );
    }

    #[test]
    fn did_you_mean_replaces_the_name() {
        let text = format!(
            "{HEAD}routes:\n  - {{ on: goal, spawn: writr }}\n  - {{ on: build, done: pass }}\n"
        );
        assert!(fixed(&text, "crumb::unknown-role").contains("spawn: writer }"));
    }
}
