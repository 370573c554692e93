//! One YAML file's names and where they are written: the roles and kinds it declares and every
//! place a route, `produces:` or `sees:` names one. Hover, go-to-definition, references, rename
//! and the document's symbols all read this one index, so they cannot disagree.

use std::ops::Range;

use crumb_core::pipeline::loader::MAX_FILE_BYTES;
use crumb_core::pipeline::located_yaml::{Document, Span, load};
use serde_json::Value;

use super::position::Lines;

/// What a name names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameKind {
    Role,
    Kind,
}

/// One place a role or kind is written.
#[derive(Debug, Clone)]
pub(crate) struct Mention {
    pub(crate) kind: NameKind,
    pub(crate) name: String,
    /// Where the name itself is (quotes left out), in bytes.
    pub(crate) bytes: Range<usize>,
    /// Whether this is the declaration (`roles.<id>`, `kinds.<name>`).
    pub(crate) declares: bool,
    /// The JSON pointer of the key or value it is.
    pub(crate) pointer: String,
}

/// A parsed file and its mentions.
pub(crate) struct Outline {
    pub(crate) document: Document,
    pub(crate) mentions: Vec<Mention>,
}

impl Outline {
    /// `None` when the text is not YAML (or past the compiler's size limit).
    pub(crate) fn parse(text: &str) -> Option<Outline> {
        if text.len() > MAX_FILE_BYTES {
            return None;
        }
        let document = load(text).ok()?;
        let lines = Lines::new(text);
        let mut mentions = Vec::new();
        let mut add = |pointer: String, kind: NameKind, name: &str, declares: bool| {
            let located = document.index.get(&pointer);
            let span = located.and_then(|l| if declares { l.key } else { l.value });
            if let Some(bytes) = span.and_then(|s| name_bytes(text, &lines, s, name)) {
                mentions.push(Mention {
                    kind,
                    name: name.to_owned(),
                    bytes,
                    declares,
                    pointer,
                });
            }
        };
        let value = &document.value;
        for (section, kind) in [("roles", NameKind::Role), ("kinds", NameKind::Kind)] {
            for name in value
                .get(section)
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.keys())
            {
                add(format!("/{section}/{}", escape(name)), kind, name, true);
            }
        }
        if let Some(roles) = value.get("roles").and_then(Value::as_object) {
            for (id, role) in roles {
                for field in ["produces", "sees"] {
                    for (i, name) in strings(role.get(field)) {
                        let pointer = format!("/roles/{}/{field}{}", escape(id), item(i));
                        add(pointer, NameKind::Kind, name, false);
                    }
                }
            }
        }
        for (n, route) in value
            .get("routes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (field, kind) in [
                ("on", NameKind::Kind),
                ("from", NameKind::Role),
                ("spawn", NameKind::Role),
            ] {
                for (i, name) in strings(route.get(field)) {
                    add(format!("/routes/{n}/{field}{}", item(i)), kind, name, false);
                }
            }
        }
        Some(Outline { document, mentions })
    }

    /// The mention under byte `offset`.
    pub(crate) fn mention_at(&self, offset: usize) -> Option<&Mention> {
        self.mentions
            .iter()
            .find(|m| m.bytes.start <= offset && offset <= m.bytes.end)
    }

    /// The innermost pointer whose key (`true`) or value (`false`) holds byte `offset`.
    pub(crate) fn pointer_at(&self, text: &str, offset: usize) -> Option<(String, bool)> {
        let lines = Lines::new(text);
        let mut best: Option<(usize, String, bool)> = None;
        for (pointer, located) in self.document.index.entries() {
            for (span, is_key) in [(located.key, true), (located.value, false)] {
                let Some(span) = span else { continue };
                let bytes = lines.span_bytes(span);
                if bytes.start <= offset
                    && offset <= bytes.end
                    && best.as_ref().is_none_or(|(len, _, _)| bytes.len() < *len)
                {
                    best = Some((bytes.len(), pointer.to_owned(), is_key));
                }
            }
        }
        best.map(|(_, pointer, is_key)| (pointer, is_key))
    }

    /// The declaration of `name`, if this file has it.
    pub(crate) fn declaration(&self, kind: NameKind, name: &str) -> Option<&Mention> {
        self.mentions
            .iter()
            .find(|m| m.declares && m.kind == kind && m.name == name)
    }

    /// The index of the route a mention is in (`/routes/3/spawn` → 3).
    pub(crate) fn route_of(mention: &Mention) -> Option<usize> {
        mention
            .pointer
            .strip_prefix("/routes/")?
            .split('/')
            .next()?
            .parse()
            .ok()
    }

    /// The key span of `pointer`, else its value's.
    pub(crate) fn span(&self, pointer: &str) -> Option<Span> {
        self.document
            .index
            .get(pointer)
            .and_then(|located| located.key.or(located.value))
    }
}

/// A scalar or a list of scalars, each with its index in the list (`None` for a lone scalar).
fn strings(value: Option<&Value>) -> Vec<(Option<usize>, &str)> {
    match value {
        Some(Value::String(s)) => vec![(None, s.as_str())],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_str().map(|s| (Some(i), s)))
            .collect(),
        _ => Vec::new(),
    }
}

fn item(index: Option<usize>) -> String {
    index.map(|i| format!("/{i}")).unwrap_or_default()
}

/// One JSON pointer segment (RFC 6901).
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// The bytes of `name` inside `span` (a quoted scalar's span holds its quotes).
fn name_bytes(text: &str, lines: &Lines<'_>, span: Span, name: &str) -> Option<Range<usize>> {
    let bytes = lines.span_bytes(Span {
        len: span
            .len
            .max(u32::try_from(name.chars().count() + 2).unwrap_or(u32::MAX)),
        ..span
    });
    let start = bytes.start + text.get(bytes.clone())?.find(name)?;
    Some(start..start + name.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_and_references_are_found_in_flow_and_block_style() {
        let text = "roles:\n  writer:\n    produces: [draft]\nkinds:\n  draft: { slot: build }\nroutes:\n  - { on: goal, spawn: writer }\n  - on: draft\n    spawn: [\"writer\"]\n";
        let outline = Outline::parse(text).unwrap();
        let at = |m: &Mention| &text[m.bytes.clone()];
        let writers: Vec<_> = outline
            .mentions
            .iter()
            .filter(|m| m.kind == NameKind::Role)
            .collect();
        assert_eq!(writers.len(), 3, "{writers:?}");
        assert!(writers.iter().all(|m| at(m) == "writer"));
        assert!(writers[0].declares);
        let drafts = outline
            .mentions
            .iter()
            .filter(|m| m.name == "draft")
            .count();
        assert_eq!(drafts, 3);
        let offset = text.find("spawn: writer").unwrap() + 8;
        assert_eq!(outline.mention_at(offset).unwrap().name, "writer");
        assert_eq!(
            outline.pointer_at(text, offset),
            Some(("/routes/0/spawn".to_owned(), false))
        );
    }
}
