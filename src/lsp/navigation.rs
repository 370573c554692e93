//! Go to definition (a route's role → the role, a kind → its declaration, a role's `template:`
//! and an `include:`/`extends:` → the file), find references (every place a role or kind is
//! named, across the pipeline and its fragments), and the document's symbols.

use std::path::{Path, PathBuf};

use lsp_types::{DocumentSymbol, Location, Position, Range, SymbolKind};
use serde_json::Value;

use super::hover::outlines;
use super::outline::{Mention, NameKind, Outline};
use super::position::Lines;
use super::schema_docs::segments;
use super::server::Server;
use super::uri::{from_path, normalize};

/// Where the thing under `offset` is defined.
pub(crate) fn definition(
    server: &Server,
    path: &Path,
    text: &str,
    offset: usize,
) -> Option<Location> {
    let outline = Outline::parse(text)?;
    if let Some(mention) = outline.mention_at(offset) {
        for (file, text, other) in outlines(server, path) {
            if let Some(declared) = other.declaration(mention.kind, &mention.name) {
                let range = Lines::new(&text).range(declared.bytes.clone());
                return Some(Location::new(from_path(&file)?, range));
            }
        }
        return None;
    }
    let (pointer, _) = outline.pointer_at(text, offset)?;
    let names_file = match segments(&pointer).as_slice() {
        [roles, _, template] => roles == "roles" && template == "template",
        [key] | [key, _] => key == "include" || key == "extends",
        _ => false,
    };
    let written = outline
        .document
        .value
        .pointer(&pointer)?
        .as_str()
        .filter(|_| names_file)?;
    let target = normalize(&path.parent()?.join(written));
    Some(Location::new(
        from_path(&target)?,
        Range::new(Position::new(0, 0), Position::new(0, 0)),
    ))
}

/// Every mention of the role or kind under `offset`, in every file sharing its names.
pub(crate) fn mentions_under(
    server: &Server,
    path: &Path,
    text: &str,
    offset: usize,
) -> Vec<(PathBuf, Range, Mention)> {
    let Some(outline) = Outline::parse(text) else {
        return Vec::new();
    };
    let Some(target) = outline.mention_at(offset) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (file, text, other) in outlines(server, path) {
        let lines = Lines::new(&text);
        for mention in other.mentions {
            if mention.kind == target.kind && mention.name == target.name {
                out.push((file.clone(), lines.range(mention.bytes.clone()), mention));
            }
        }
    }
    out
}

pub(crate) fn references(
    server: &Server,
    path: &Path,
    text: &str,
    offset: usize,
    with_declaration: bool,
) -> Vec<Location> {
    mentions_under(server, path, text, offset)
        .into_iter()
        .filter(|(_, _, m)| with_declaration || !m.declares)
        .filter_map(|(file, range, _)| Some(Location::new(from_path(&file)?, range)))
        .collect()
}

/// Roles, kinds, routes and QA checks, each where it is written.
#[allow(
    deprecated,
    reason = "DocumentSymbol's `deprecated` field must still be written"
)]
pub(crate) fn symbols(text: &str) -> Vec<DocumentSymbol> {
    let Some(outline) = Outline::parse(text) else {
        return Vec::new();
    };
    let lines = Lines::new(text);
    let symbol = |name: String, kind: SymbolKind, pointer: &str| {
        let span = outline.span(pointer)?;
        let range = lines.span_range(span);
        Some(DocumentSymbol {
            name,
            detail: None,
            kind,
            tags: None,
            deprecated: None,
            range,
            selection_range: range,
            children: None,
        })
    };
    let mut out = Vec::new();
    for mention in outline.mentions.iter().filter(|m| m.declares) {
        let kind = match mention.kind {
            NameKind::Role => SymbolKind::CLASS,
            NameKind::Kind => SymbolKind::ENUM_MEMBER,
        };
        out.extend(symbol(mention.name.clone(), kind, &mention.pointer));
    }
    let value = &outline.document.value;
    for (i, route) in value
        .get("routes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let on = route.get("on").and_then(Value::as_str).unwrap_or("?");
        let action = ["spawn", "run", "done", "await", "join"]
            .iter()
            .find_map(|key| route.get(*key).map(|v| format!("{key} {}", compact(v))))
            .unwrap_or_default();
        out.extend(symbol(
            format!("route {}: on {on} → {action}", i + 1),
            SymbolKind::EVENT,
            &format!("/routes/{i}"),
        ));
    }
    let checks = value.pointer("/qa/checks").and_then(Value::as_array);
    for (i, check) in checks.into_iter().flatten().enumerate() {
        let id = check.get("id").and_then(Value::as_str).unwrap_or("?");
        let kind = check.get("kind").and_then(Value::as_str).unwrap_or("?");
        out.extend(symbol(
            format!("check {id} ({kind})"),
            SymbolKind::FUNCTION,
            &format!("/qa/checks/{i}"),
        ));
    }
    out
}

fn compact(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}
