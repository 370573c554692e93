//! Hover: a key's schema description, a role's declaration and the routes that spawn it, a
//! kind's producers and the routes that react to it, a diagnostic code's `crumb explain` text,
//! and in a template what a context variable holds.

use std::fmt::Write as _;
use std::path::Path;

use crumb_core::pipeline::codes;
use crumb_core::transcript::Kind;
use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind};
use serde_json::Value;

use super::outline::{Mention, NameKind, Outline};
use super::position::{Lines, word_at};
use super::schema_docs::{self, Which};
use super::server::{Server, is_yaml};
use super::template_context;

pub(crate) fn hover(server: &Server, path: &Path, text: &str, offset: usize) -> Option<Hover> {
    let lines = Lines::new(text);
    let mut parts: Vec<String> = Vec::new();
    if let Some((word, _)) = word_at(text, offset, |c| {
        c.is_ascii_alphanumeric() || "-_:".contains(c)
    }) && let Some(code) = codes::find(word.trim_end_matches(':'))
    {
        parts.push(code.explanation());
    }
    let position = lines.position(offset);
    for diagnostic in server.published.get(path).into_iter().flatten() {
        let r = diagnostic.range;
        if r.start <= position
            && position <= r.end
            && let Some(lsp_types::NumberOrString::String(code)) = &diagnostic.code
            && let Some(code) = codes::find(code)
            && !parts.contains(&code.explanation())
        {
            parts.push(code.explanation());
        }
    }
    if is_yaml(path) {
        if let Some(outline) = Outline::parse(text) {
            if let Some(mention) = outline.mention_at(offset) {
                parts.push(match mention.kind {
                    NameKind::Role => role(server, path, &mention.name),
                    NameKind::Kind => kind(server, path, &mention.name),
                });
            } else if let Some((pointer, true)) = outline.pointer_at(text, offset) {
                let which = if crumb_core::pipeline::file_report::is_preset(path, text.as_bytes()) {
                    Which::Preset
                } else {
                    Which::Pipeline
                };
                let segments = schema_docs::segments(&pointer);
                if let Some(description) = schema_docs::description(which, &segments) {
                    parts.push(format!("**{}**\n\n{description}", segments.last()?));
                }
            }
        }
    } else if let Some(text) =
        template_context::hover(&template_context::context(server, path), text, offset)
    {
        parts.push(text);
    }
    (!parts.is_empty()).then(|| Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: parts.join("\n\n---\n\n"),
        }),
        range: None,
    })
}

/// Every outline of the files that share names with `path`.
pub(crate) fn outlines(server: &Server, path: &Path) -> Vec<(std::path::PathBuf, String, Outline)> {
    server
        .family(path)
        .into_iter()
        .filter_map(|file| {
            let text = server.documents.text(&file)?;
            let outline = Outline::parse(&text)?;
            Some((file, text, outline))
        })
        .collect()
}

fn route_line(route: &Value, index: usize) -> String {
    let compact = serde_json::to_string(route).unwrap_or_default();
    format!("- route {}: `{compact}`", index + 1)
}

fn routes_where(
    server: &Server,
    path: &Path,
    kind: NameKind,
    name: &str,
    field: &[&str],
) -> String {
    let mut out = String::new();
    for (_, _, outline) in outlines(server, path) {
        let routes = outline
            .document
            .value
            .get("routes")
            .and_then(Value::as_array);
        let hits = outline.mentions.iter().filter(|m: &&Mention| {
            m.kind == kind
                && m.name == name
                && !m.declares
                && field.iter().any(|f| m.pointer.contains(&format!("/{f}")))
        });
        for index in hits.filter_map(Outline::route_of) {
            if let Some(route) = routes.and_then(|r| r.get(index)) {
                let _ = writeln!(out, "{}", route_line(route, index));
            }
        }
    }
    out
}

fn role(server: &Server, path: &Path, name: &str) -> String {
    let mut out = format!("**role `{name}`**\n\n");
    for (_, _, outline) in outlines(server, path) {
        if let Some(Value::Object(fields)) = outline
            .document
            .value
            .get("roles")
            .and_then(|r| r.get(name))
        {
            for (key, value) in fields {
                let shown = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                let _ = writeln!(out, "- {key}: `{shown}`");
            }
            break;
        }
    }
    let spawned = routes_where(server, path, NameKind::Role, name, &["spawn"]);
    if spawned.is_empty() {
        out.push_str("\nno route spawns it\n");
    } else {
        let _ = write!(out, "\nspawned by:\n{spawned}");
    }
    out
}

fn kind(server: &Server, path: &Path, name: &str) -> String {
    let mut out = format!("**kind `{name}`**\n\n");
    if Kind::vocabulary(name).is_some()
        && let Some(text) = crumb_core::transcript::explain(name)
    {
        let _ = writeln!(out, "{}\n", text.lines().next().unwrap_or_default());
    }
    let mut producers = Vec::new();
    for (_, _, outline) in outlines(server, path) {
        producers.extend(
            outline
                .mentions
                .iter()
                .filter(|m| {
                    m.kind == NameKind::Kind && m.name == name && m.pointer.contains("/produces")
                })
                .filter_map(|m| m.pointer.split('/').nth(2).map(str::to_owned)),
        );
    }
    if producers.is_empty() {
        out.push_str("no role produces it\n");
    } else {
        let _ = writeln!(out, "produced by: {}", producers.join(", "));
    }
    let reacting = routes_where(server, path, NameKind::Kind, name, &["on"]);
    if !reacting.is_empty() {
        let _ = write!(out, "\nroutes on it:\n{reacting}");
    }
    out
}
