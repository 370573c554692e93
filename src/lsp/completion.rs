//! Completion: keys and enum values from the schema; role ids where a route names a role; kinds
//! where a route, `produces:` or `sees:` names one; adapters and models from the presets;
//! verdicts and severities in `when:`; template paths relative to the pipeline; inside a `.j2`
//! template, the context variables and their fields. What the cursor is in is read from the
//! line being typed and the keys above it, since a half-typed line is seldom valid YAML.

use std::collections::BTreeSet;
use std::path::Path;

use crumb_core::pipeline::file_report::is_preset;
use crumb_core::transcript::Kind;
use crumb_core::vocab::{Severity, Verdict};
use lsp_types::{CompletionItem, CompletionItemKind, Documentation};
use serde_json::Value;

use super::hover::outlines;
use super::outline::NameKind;
use super::position::Lines;
use super::schema_docs::{self, Which};
use super::server::{Server, is_yaml};
use super::template_context;

/// Where in the YAML the cursor is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Typing a key of the mapping at this path.
    Key(Vec<String>),
    /// Typing the value of this key (inside a flow list of it, too), at this path.
    Value(Vec<String>),
}

pub(crate) fn complete(
    server: &Server,
    path: &Path,
    text: &str,
    offset: usize,
) -> Vec<CompletionItem> {
    if !is_yaml(path) {
        return variables(server, path, text, offset);
    }
    let which = if is_preset(path, text.as_bytes()) {
        Which::Preset
    } else {
        Which::Pipeline
    };
    match place(text, offset) {
        Place::Key(at) => schema_docs::keys(which, &at)
            .into_iter()
            .map(|(key, doc)| item(key, CompletionItemKind::PROPERTY, doc))
            .collect(),
        Place::Value(at) => values(server, path, which, &at),
    }
}

fn item(label: &str, kind: CompletionItemKind, doc: Option<&str>) -> CompletionItem {
    CompletionItem {
        label: label.to_owned(),
        kind: Some(kind),
        documentation: doc.map(|d| Documentation::String(d.to_owned())),
        ..CompletionItem::default()
    }
}

fn names(server: &Server, path: &Path, kind: NameKind) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = outlines(server, path)
        .iter()
        .flat_map(|(_, _, o)| {
            o.mentions
                .iter()
                .filter(|m| m.kind == kind && (m.declares || kind == NameKind::Kind))
        })
        .map(|m| m.name.clone())
        .collect();
    if kind == NameKind::Kind {
        out.extend(Kind::ALL.iter().map(|k| k.as_str().to_owned()));
        out.insert(crumb_core::pipeline::triggers::VERDICT_TRIGGER.to_owned());
        out.insert(crumb_core::pipeline::triggers::QA_ERROR_TRIGGER.to_owned());
    }
    out
}

fn values(server: &Server, path: &Path, which: Which, at: &[String]) -> Vec<CompletionItem> {
    let key = at
        .iter()
        .rev()
        .find(|s| s.parse::<usize>().is_err())
        .map_or("", String::as_str);
    let parent = at.first().map_or("", String::as_str);
    let listed = |labels: Vec<String>, kind| labels.iter().map(|l| item(l, kind, None)).collect();
    match (parent, key) {
        ("routes", "spawn" | "from") => listed(
            names(server, path, NameKind::Role).into_iter().collect(),
            CompletionItemKind::REFERENCE,
        ),
        ("routes", "on") | ("roles", "produces" | "sees") => listed(
            names(server, path, NameKind::Kind).into_iter().collect(),
            CompletionItemKind::ENUM_MEMBER,
        ),
        (_, "verdict") => listed(
            Verdict::ALL.iter().map(|v| v.as_str().to_owned()).collect(),
            CompletionItemKind::ENUM_MEMBER,
        ),
        (_, "severity") => listed(
            Severity::ALL
                .iter()
                .map(|s| s.as_str().to_owned())
                .collect(),
            CompletionItemKind::ENUM_MEMBER,
        ),
        ("roles", "template") => listed(template_paths(path), CompletionItemKind::FILE),
        (_, "adapter" | "fallback") => listed(
            crate::adapters::registry::AdapterKind::ALL
                .iter()
                .map(|a| a.as_str().to_owned())
                .collect(),
            CompletionItemKind::ENUM_MEMBER,
        ),
        (_, "model") => listed(preset_models(path), CompletionItemKind::VALUE),
        _ => listed(
            schema_docs::values(which, at)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            CompletionItemKind::ENUM_MEMBER,
        ),
    }
}

/// `.j2` files beside the pipeline and in `../templates/`, written relative to the pipeline.
fn template_paths(path: &Path) -> Vec<String> {
    let Some(dir) = path.parent() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (folder, prefix) in [
        (dir.to_path_buf(), ""),
        (dir.join("../templates"), "../templates/"),
    ] {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut found: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| {
                Path::new(name)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("j2"))
            })
            .map(|name| format!("{prefix}{name}"))
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

/// The models the project's presets (`../presets/*.yaml`) bind.
fn preset_models(path: &Path) -> Vec<String> {
    let Some(dir) = path.parent() else {
        return Vec::new();
    };
    let mut out = BTreeSet::new();
    for folder in [dir.join("../presets"), dir.join("presets")] {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok).take(100) {
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue;
            };
            let Some(outline) = super::outline::Outline::parse(&text) else {
                continue;
            };
            collect_models(&outline.document.value, &mut out);
        }
    }
    out.into_iter().collect()
}

fn collect_models(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match value {
                    Value::String(model) if key == "model" => {
                        out.insert(model.clone());
                    }
                    _ => collect_models(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_models(v, out)),
        _ => {}
    }
}

fn variables(server: &Server, path: &Path, text: &str, offset: usize) -> Vec<CompletionItem> {
    if !template_context::in_tag(text, offset) {
        return Vec::new();
    }
    let context = template_context::context(server, path);
    let (parent, _) = template_context::typed_path(text, offset);
    let Some(Value::Object(fields)) = template_context::lookup(&context, &parent) else {
        return Vec::new();
    };
    fields
        .iter()
        .map(|(name, sample)| {
            let shape = match sample {
                Value::Object(_) => "record",
                Value::Array(_) => "list",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "text",
            };
            CompletionItem {
                label: name.clone(),
                kind: Some(CompletionItemKind::VARIABLE),
                detail: Some(shape.to_owned()),
                ..CompletionItem::default()
            }
        })
        .collect()
}

/// The indentation of a line and whether its content starts with a list item's `- `.
fn indent(line: &str) -> (usize, bool) {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    (
        spaces,
        line[spaces..].starts_with("- ") || &line[spaces..] == "-",
    )
}

/// The key a `key:` line opens (nothing after the colon but a comment), if it is one.
fn opened_key(content: &str) -> Option<&str> {
    let (key, rest) = content.split_once(':')?;
    let rest = rest.trim();
    (rest.is_empty() || rest.starts_with('#') || rest.starts_with('|') || rest.starts_with('>'))
        .then(|| key.trim().trim_matches('"').trim_matches('\''))
        .filter(|k| !k.is_empty() && !k.contains(' '))
}

/// The keys above `line` whose blocks it is in, outermost first; list items count as `0`.
fn block_path(lines: &Lines<'_>, line: usize) -> Vec<String> {
    let current = lines.line(line);
    let (spaces, item) = indent(current);
    let mut target = spaces;
    let mut out = Vec::new();
    if item {
        out.push("0".to_owned());
    }
    for above in (0..line).rev() {
        let text = lines.line(above);
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (spaces, item) = indent(text);
        let content_at = if item { spaces + 2 } else { spaces };
        if content_at >= target && !(item && content_at == target) {
            continue;
        }
        if item && content_at == target {
            // The item this block is the mapping of.
            out.push("0".to_owned());
            target = spaces;
            continue;
        }
        let content = text[content_at.min(text.len())..].trim_end();
        if let Some(key) = opened_key(content) {
            out.push(key.to_owned());
            target = spaces;
            if item {
                out.push("0".to_owned());
            }
        } else if item {
            target = spaces;
            out.push("0".to_owned());
        } else {
            target = spaces;
        }
        if target == 0 {
            break;
        }
    }
    out.reverse();
    out
}

/// What the cursor at `offset` is typing.
pub(crate) fn place(text: &str, offset: usize) -> Place {
    let lines = Lines::new(text);
    let position = lines.position(offset);
    let line = lines.line(position.line as usize);
    let start = offset - lines.offset(lsp_types::Position::new(position.line, 0));
    let before = &line[..start.min(line.len())];
    let mut at = block_path(&lines, position.line as usize);
    let content = before.trim_start().trim_start_matches("- ").trim_start();
    // Walk the line's flow mappings and lists: `{ on: goal, spawn: wr` → in the item's
    // mapping, typing `spawn`'s value.
    let mut key: Option<String> = None;
    let mut word = String::new();
    let mut depth_list = 0usize;
    for c in content.chars() {
        match c {
            ':' if depth_list == 0 => {
                key = Some(word.trim().to_owned());
                word.clear();
            }
            ',' if depth_list == 0 => {
                key = None;
                word.clear();
            }
            '{' => {
                if let Some(k) = key.take() {
                    at.push(k);
                }
                word.clear();
            }
            '}' => {
                at.pop();
                key = None;
                word.clear();
            }
            '[' => depth_list += 1,
            ']' => depth_list = depth_list.saturating_sub(1),
            _ => word.push(c),
        }
    }
    match key {
        Some(key) if !key.is_empty() => {
            at.push(key);
            Place::Value(at)
        }
        _ => Place::Key(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Place {
        let offset = text.find('|').unwrap();
        let text = text.replace('|', "");
        place(&text, offset)
    }

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_place_is_read_from_the_line_and_the_blocks_above() {
        assert_eq!(
            at("routes:\n  - { on: goal, spawn: pl|"),
            Place::Value(path(&["routes", "0", "spawn"]))
        );
        assert_eq!(
            at("routes:\n  - { on: goal, sp|"),
            Place::Key(path(&["routes", "0"]))
        );
        assert_eq!(
            at("routes:\n  - on: |"),
            Place::Value(path(&["routes", "0", "on"]))
        );
        assert_eq!(
            at("roles:\n  writer:\n    produces: [draft, |"),
            Place::Value(path(&["roles", "writer", "produces"]))
        );
        assert_eq!(
            at("roles:\n  writer:\n    te|"),
            Place::Key(path(&["roles", "writer"]))
        );
        assert_eq!(
            at("routes:\n  - on: verdict\n    when: { verdict: |"),
            Place::Value(path(&["routes", "0", "when", "verdict"]))
        );
        assert_eq!(
            at("qa:\n  checks:\n    - id: x\n      kind: |"),
            Place::Value(path(&["qa", "checks", "0", "kind"]))
        );
        assert_eq!(at("na|"), Place::Key(Vec::new()));
    }
}
