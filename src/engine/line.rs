//! Replay's fast way to read a transcript line: parse it borrowing from the line, then copy it
//! into one [`Event`] that is reused for every line, so folding a long transcript allocates almost
//! nothing per event.
//!
//! [`LineRef`] accepts exactly the lines [`Event`] accepts (same fields, same types, unknown keys
//! refused, `data` checked to be an object of JSON values), so the fast path never folds a line the
//! strict parser would skip. `data` itself is not kept: kinds whose `data` the engine reads (see
//! [`super::data::reads_data`]) are handed to the strict parser instead.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::transcript::{ArtifactRef, Event, Kind, Metadata, Scores, Step};

/// Longest string kept for reuse between lines; a bigger one is freed instead of held on to.
const MAX_REUSED_CAPACITY: usize = 64 * 1024;
/// Spare strings kept for optional fields.
const MAX_SPARES: usize = 8;

/// One transcript line, borrowing its strings from the line where they have no escapes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LineRef<'a> {
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    ts: Text<'a>,
    #[serde(borrow)]
    session_id: Text<'a>,
    #[serde(borrow)]
    from: Text<'a>,
    pub(super) kind: Kind,
    #[serde(borrow, default)]
    to: Option<Text<'a>>,
    #[serde(borrow, default)]
    parent_event_id: Option<Text<'a>>,
    #[serde(default)]
    step: Option<Step>,
    #[serde(borrow, default)]
    body: Option<Text<'a>>,
    #[serde(default, rename = "data")]
    _data: Option<ObjectShape>,
    #[serde(default)]
    artifacts: Vec<ArtifactRef>,
    #[serde(default)]
    scores: Option<Box<Scores>>,
    #[serde(default)]
    metadata: Option<Box<Metadata>>,
}

/// A string field, borrowed from the line unless it had to be unescaped.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(value)))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(value.to_owned())))
            }
            fn visit_string<E: de::Error>(self, value: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(value)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A JSON object checked exactly as `serde_json::Map` would accept it, without building it.
struct ObjectShape;

impl<'de> Deserialize<'de> for ObjectShape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(ShapeVisitor)
            .map(|AnyShape| ObjectShape)
    }
}

/// Any JSON value a `serde_json::Value` would accept (numbers in range, nesting within the
/// parser's limit), checked and dropped.
struct AnyShape;

impl<'de> Deserialize<'de> for AnyShape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = AnyShape;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<AnyShape, E> {
        Ok(AnyShape)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<AnyShape, E> {
        Ok(AnyShape)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<AnyShape, E> {
        Ok(AnyShape)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<AnyShape, E> {
        Ok(AnyShape)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<AnyShape, E> {
        Ok(AnyShape)
    }
    fn visit_unit<E: de::Error>(self) -> Result<AnyShape, E> {
        Ok(AnyShape)
    }
    fn visit_none<E: de::Error>(self) -> Result<AnyShape, E> {
        Ok(AnyShape)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<AnyShape, D::Error> {
        AnyShape::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyShape, A::Error> {
        while seq.next_element::<AnyShape>()?.is_some() {}
        Ok(AnyShape)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyShape, A::Error> {
        while map.next_key::<AnyShape>()?.is_some() {
            map.next_value::<AnyShape>()?;
        }
        Ok(AnyShape)
    }
}

/// The event replay folds, refilled line after line so its strings keep their allocations.
#[derive(Debug, Clone, Default)]
pub(super) struct Scratch {
    event: Option<Event>,
    /// Strings of optional fields that were absent on the last line, kept for the next.
    spares: Vec<String>,
}

impl Scratch {
    /// Copy `line` into the reused event. Its `data` is left out: the caller only uses this for
    /// kinds whose `data` the engine does not read.
    pub(super) fn fill(&mut self, line: LineRef<'_>) -> &Event {
        let Scratch { event, spares } = self;
        let event = event.get_or_insert_with(|| Event {
            id: String::new(),
            ts: String::new(),
            session_id: String::new(),
            from: String::new(),
            kind: line.kind,
            to: None,
            parent_event_id: None,
            step: None,
            body: None,
            data: None,
            artifacts: Vec::new(),
            scores: None,
            metadata: None,
        });
        set(&mut event.id, &line.id.0);
        set(&mut event.ts, &line.ts.0);
        set(&mut event.session_id, &line.session_id.0);
        set(&mut event.from, &line.from.0);
        event.kind = line.kind;
        set_optional(&mut event.to, line.to.as_ref(), spares);
        set_optional(
            &mut event.parent_event_id,
            line.parent_event_id.as_ref(),
            spares,
        );
        event.step = line.step;
        set_optional(&mut event.body, line.body.as_ref(), spares);
        event.data = None;
        event.artifacts = line.artifacts;
        event.scores = line.scores;
        event.metadata = line.metadata;
        event
    }
}

fn set(slot: &mut String, value: &str) {
    if slot.capacity() > MAX_REUSED_CAPACITY && value.len() <= MAX_REUSED_CAPACITY {
        *slot = String::new();
    }
    slot.clear();
    slot.push_str(value);
}

fn set_optional(slot: &mut Option<String>, value: Option<&Text<'_>>, spares: &mut Vec<String>) {
    match value {
        None => {
            if let Some(old) = slot.take()
                && old.capacity() <= MAX_REUSED_CAPACITY
                && spares.len() < MAX_SPARES
            {
                spares.push(old);
            }
        }
        Some(text) => set(
            slot.get_or_insert_with(|| spares.pop().unwrap_or_default()),
            &text.0,
        ),
    }
}
