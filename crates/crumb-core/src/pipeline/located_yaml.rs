//! Pass 1: YAML text → a JSON value plus an index from JSON pointers to source locations.
//!
//! The schema pass and the semantic checks both speak JSON pointers (`/routes/3/spawn`); this
//! index turns any pointer back into the line and column people see in their editor. Duplicate
//! keys are collected here (serde-saphyr hands them through) so that every one is reported, not
//! just the first.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::{DuplicateKeyPolicy, Options, Spanned};

/// A place in the source: 1-based line and column (in characters) and the length to underline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub struct Span {
    pub line: u32,
    pub col: u32,
    pub len: u32,
    /// Which file of an assembled pipeline (`include:`/`extends:`) this is in: 0 is the file
    /// compiled, `n` is [`SpanIndex::files`]`[n - 1]`. Diagnostics take their file from it.
    #[serde(skip)]
    pub file: u32,
}

impl Span {
    /// Span of a serde-saphyr location; `None` when the parser did not know where it was.
    pub(crate) fn from_location(location: &serde_saphyr::Location) -> Option<Span> {
        let line = u32::try_from(location.line()).ok()?;
        let col = u32::try_from(location.column()).ok()?;
        if line == 0 {
            return None;
        }
        let len = u32::try_from(location.span().len()).unwrap_or(1).max(1);
        Some(Span {
            line,
            col: col.max(1),
            len,
            file: 0,
        })
    }
}

/// Where a value and (for mapping entries) its key are written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Located {
    /// The key of a mapping entry; `None` for sequence items and the root.
    pub key: Option<Span>,
    /// The value itself.
    pub value: Option<Span>,
}

/// A key that appears twice in one mapping.
#[derive(Debug, Clone)]
pub struct DuplicateKey {
    /// Pointer of the mapping holding the key.
    pub parent: String,
    pub key: String,
    pub first: Option<Span>,
    pub again: Option<Span>,
}

/// The loaded document.
#[derive(Debug, Clone, Default)]
pub struct Document {
    pub value: Value,
    pub index: SpanIndex,
    /// Duplicate keys, in source order. The value keeps the first occurrence.
    pub duplicates: Vec<DuplicateKey>,
}

/// JSON pointer → location.
#[derive(Debug, Clone, Default)]
pub struct SpanIndex {
    entries: HashMap<String, Located>,
    /// The other files an assembled document's spans point into (see [`Span::file`]).
    pub files: Vec<std::path::PathBuf>,
}

impl SpanIndex {
    /// Mark every span as being in file `file`.
    pub(crate) fn retag(&mut self, file: u32) {
        for located in self.entries.values_mut() {
            for span in [&mut located.key, &mut located.value].into_iter().flatten() {
                span.file = file;
            }
        }
    }

    /// Drop the entries at `pointer` and below it.
    pub(crate) fn remove_tree(&mut self, pointer: &str) {
        let below = format!("{pointer}/");
        self.entries
            .retain(|p, _| p != pointer && !p.starts_with(&below));
    }

    /// Copy `from`'s entries at `from_pointer` and below to `to_pointer`.
    pub(crate) fn graft(&mut self, from: &SpanIndex, from_pointer: &str, to_pointer: &str) {
        let below = format!("{from_pointer}/");
        for (p, located) in &from.entries {
            if p == from_pointer {
                self.entries.insert(to_pointer.to_owned(), *located);
            } else if let Some(rest) = p.strip_prefix(&below) {
                self.entries
                    .insert(format!("{to_pointer}/{rest}"), *located);
            }
        }
    }

    /// Every pointer with its location, in no order: what an editor searches for the place under
    /// its cursor.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Located)> {
        self.entries
            .iter()
            .map(|(pointer, located)| (pointer.as_str(), located))
    }

    /// Location of exactly this pointer.
    pub fn get(&self, pointer: &str) -> Option<Located> {
        self.entries.get(pointer).copied()
    }

    /// Span of the value at `pointer`, or of its nearest ancestor that has one.
    pub(crate) fn value_span(&self, pointer: &str) -> Option<Span> {
        self.nearest(pointer, |l| l.value)
    }

    /// Span of the key at `pointer` (falling back to its value, then to ancestors).
    pub(crate) fn key_span(&self, pointer: &str) -> Option<Span> {
        self.nearest(pointer, |l| l.key.or(l.value))
    }

    fn nearest(&self, pointer: &str, pick: impl Fn(&Located) -> Option<Span>) -> Option<Span> {
        let mut current = pointer;
        loop {
            if let Some(span) = self.entries.get(current).and_then(&pick) {
                return Some(span);
            }
            if current.is_empty() {
                return None;
            }
            current = current.rfind('/').map_or("", |i| &current[..i]);
        }
    }
}

/// Escape one JSON pointer segment (RFC 6901).
pub(crate) fn escape_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Why a document could not be loaded at all.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    pub message: String,
    pub span: Option<Span>,
}

/// Parse YAML into a located document. Only syntax errors fail; shape is checked later.
pub fn load(text: &str) -> Result<Document, LoadError> {
    let mut options = Options::default();
    options.duplicate_keys = DuplicateKeyPolicy::PassThrough;
    options.with_snippet = false;
    // YAML 1.2 booleans: `yes`, `no`, `on`, `off` stay strings.
    options.strict_booleans = true;
    let root: Spanned<Raw> = match serde_saphyr::from_str_with_options(text, options) {
        Ok(root) => root,
        Err(err) => return Err(load_error(&err)),
    };
    let mut builder = Builder::default();
    let value = builder.convert(root, String::new(), None);
    Ok(Document {
        value,
        index: SpanIndex {
            entries: builder.entries,
            files: Vec::new(),
        },
        duplicates: builder.duplicates,
    })
}

fn load_error(err: &serde_saphyr::Error) -> LoadError {
    let span = err.location().as_ref().and_then(Span::from_location);
    let rendered = err.to_string();
    // The rendered error may carry its own position suffix or snippet; keep the first line, and
    // drop a trailing " at line X column Y" so our own renderer owns positions.
    let first = rendered.lines().next().unwrap_or("invalid YAML").trim();
    let message = match first.find(" at line ") {
        Some(i) => first[..i].to_string(),
        None => first.to_string(),
    };
    // Say it in pipeline terms rather than with the parser library's API advice.
    let message = if message.starts_with("multiple YAML documents") {
        "the file holds more than one YAML document (`---`); a pipeline or preset is exactly one"
            .to_string()
    } else {
        message
    };
    LoadError {
        message: if message.is_empty() {
            "invalid YAML".into()
        } else {
            message
        },
        span,
    }
}

/// A YAML node as read, before it becomes JSON.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Raw>, Spanned<Raw>)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::UInt(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        i64::try_from(v)
            .map(Raw::Int)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        u64::try_from(v)
            .map(Raw::UInt)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Raw, E> {
        Ok(Raw::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            items.push(item);
        }
        Ok(Raw::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Raw>>()? {
            let value = map.next_value::<Spanned<Raw>>()?;
            entries.push((key, value));
        }
        Ok(Raw::Map(entries))
    }
}

#[derive(Default)]
struct Builder {
    entries: HashMap<String, Located>,
    duplicates: Vec<DuplicateKey>,
}

impl Builder {
    fn convert(&mut self, node: Spanned<Raw>, pointer: String, key: Option<Span>) -> Value {
        let value_span = Span::from_location(&node.referenced);
        let value = match node.value {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::Int(i) => Value::Number(i.into()),
            Raw::UInt(u) => Value::Number(u.into()),
            Raw::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
            Raw::Str(s) => Value::String(s),
            Raw::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    out.push(self.convert(item, format!("{pointer}/{i}"), None));
                }
                Value::Array(out)
            }
            Raw::Map(entries) => {
                let mut out = Map::new();
                for (k, v) in entries {
                    let key_span = Span::from_location(&k.referenced);
                    let name = key_text(&k.value);
                    let child = format!("{pointer}/{}", escape_segment(&name));
                    if out.contains_key(&name) {
                        let first = self.entries.get(&child).and_then(|l| l.key);
                        self.duplicates.push(DuplicateKey {
                            parent: pointer.clone(),
                            key: name,
                            first,
                            again: key_span,
                        });
                        continue;
                    }
                    let converted = self.convert(v, child, key_span);
                    out.insert(name, converted);
                }
                Value::Object(out)
            }
        };
        self.entries.insert(
            pointer,
            Located {
                key,
                value: value_span,
            },
        );
        value
    }
}

/// Mapping keys become JSON object keys: scalars by their text, anything else by a marker the
/// schema will reject as an unknown key.
fn key_text(raw: &Raw) -> String {
    match raw {
        Raw::Null => "null".into(),
        Raw::Bool(b) => b.to_string(),
        Raw::Int(i) => i.to_string(),
        Raw::UInt(u) => u.to_string(),
        Raw::Float(f) => f.to_string(),
        Raw::Str(s) => s.clone(),
        Raw::Seq(_) => "<sequence>".into(),
        Raw::Map(_) => "<mapping>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_keys_and_values() {
        let doc = load("a: 1\nb:\n  - x\n  - { c: yes }\na: 2\n").unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": 1, "b": ["x", {"c": "yes"}]})
        );
        let b1 = doc.index.get("/b/1/c").unwrap();
        assert_eq!(
            b1.key,
            Some(Span {
                line: 4,
                col: 7,
                len: 1,
                file: 0,
            })
        );
        assert_eq!(
            b1.value,
            Some(Span {
                line: 4,
                col: 10,
                len: 3,
                file: 0,
            })
        );
        assert_eq!(doc.duplicates.len(), 1);
        assert_eq!(doc.duplicates[0].again.map(|s| s.line), Some(5));
    }
}
