//! Replay's fast way to read a transcript line, in two halves that may run on different threads.
//!
//! [`LineRef::spans`] checks the line, notes where each string field's JSON text lies in it and
//! builds the typed fields (`scores`, `metadata`, `artifacts`, the `data` the engine reads) into a
//! [`LineSpans`]. [`Scratch::fill`] later copies the strings into one [`Event`] reused for every
//! line and moves the typed fields in. Replay reads lines on worker threads and folds on one, so
//! all the parsing happens on the workers and the folding thread only copies and folds.
//!
//! The fast path folds exactly the lines the strict parser ([`super::parse::parse_line`]) folds:
//! [`LineRef`] has the envelope's fields (unknown keys refused, `data` checked to be an object of
//! JSON values), and whatever cannot be turned into the typed field (a string that is not a
//! string, metadata with an unknown key, a legacy verdict with its scores under `data` …) makes it
//! give up, so the line goes to the strict parser. `data` is built only for kinds whose `data` the engine reads (see
//! [`super::payload::reads_data`]); over half of a long transcript is `tool.call` lines whose payload
//! nothing routes on.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::transcript::{ArtifactRef, Data, Draft, Event, Kind, Metadata, Scores, Step};

/// Longest string kept for reuse between lines; a bigger one is freed instead of held on to.
const MAX_REUSED_CAPACITY: usize = 64 * 1024;
/// Spare strings kept for optional fields.
const MAX_SPARES: usize = 8;

/// One transcript line with each field left as its JSON text.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineRef<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    ts: &'a RawValue,
    #[serde(borrow)]
    session_id: &'a RawValue,
    #[serde(borrow)]
    from: &'a RawValue,
    kind: Kind,
    #[serde(borrow, default)]
    to: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parent_event_id: Option<&'a RawValue>,
    #[serde(default)]
    step: Option<Step>,
    #[serde(borrow, default)]
    body: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    // The typed fields are built in the same pass: one that does not fit fails the whole line,
    // which then goes to the strict parser exactly as a failed second look would send it
    // (`"artifacts": null` included: a `Vec` refuses it, as the strict parser does).
    #[serde(default)]
    artifacts: Vec<ArtifactRef>,
    #[serde(default)]
    scores: Option<Box<Scores>>,
    #[serde(default)]
    metadata: Option<Box<Metadata>>,
}

impl<'a> LineRef<'a> {
    /// Where the fields of `text` lie in `line`, the line `text` was cut from; `None` when the
    /// strict parser must read the line.
    pub fn spans(line: &'a str, text: &'a str) -> Option<LineSpans> {
        let parsed = serde_json::from_str::<LineRef>(text).ok()?;
        // `data` is built only where the engine reads it (here, on the reading thread, so the
        // folding thread only moves it); elsewhere it is only checked.
        let data: Option<Data> = match parsed.data {
            Some(raw) if super::payload::reads_data(parsed.kind) => {
                Some(serde_json::from_str(raw.get()).ok()?)
            }
            Some(raw) => {
                serde_json::from_str::<ObjectShape>(raw.get()).ok()?;
                None
            }
            None => None,
        };
        // A legacy verdict with its scores under `data` is mapped by the strict parser.
        if parsed.scores.is_none()
            && super::legacy::data_scores_kind(parsed.kind)
            && data
                .as_ref()
                .is_some_and(|d| d.get("scores").is_some_and(serde_json::Value::is_object))
        {
            return None;
        }
        let base = line.as_ptr().addr();
        // `escaped` matters only for the fields copied as strings.
        let span = |raw: &RawValue, string: bool| -> Option<Span> {
            let start = raw.get().as_ptr().addr().checked_sub(base)?;
            let end = start.checked_add(raw.get().len())?;
            Some(Span {
                start: u32::try_from(start).ok()?,
                end: u32::try_from(end).ok()?,
                escaped: string && raw.get().contains('\\'),
            })
        };
        let optional = |raw: Option<&RawValue>, string: bool| -> Option<Option<Span>> {
            raw.map_or(Some(None), |raw| span(raw, string).map(Some))
        };
        Some(LineSpans {
            id: span(parsed.id, true)?,
            ts: span(parsed.ts, true)?,
            session_id: span(parsed.session_id, true)?,
            from: span(parsed.from, true)?,
            kind: parsed.kind,
            step: parsed.step,
            to: optional(parsed.to, true)?,
            parent_event_id: optional(parsed.parent_event_id, true)?,
            body: optional(parsed.body, true)?,
            data,
            artifacts: parsed.artifacts,
            scores: parsed.scores,
            metadata: parsed.metadata,
        })
    }
}

/// Where a line's string fields lie in it, as [`LineRef::spans`] found them, and its typed
/// fields, built (on the reading thread, so the folding thread only moves them).
#[derive(Debug, Clone)]
pub struct LineSpans {
    id: Span,
    ts: Span,
    session_id: Span,
    from: Span,
    kind: Kind,
    step: Option<Step>,
    to: Option<Span>,
    parent_event_id: Option<Span>,
    body: Option<Span>,
    /// Built, only for kinds whose `data` the engine reads.
    data: Option<Data>,
    artifacts: Vec<ArtifactRef>,
    scores: Option<Box<Scores>>,
    metadata: Option<Box<Metadata>>,
}

/// The byte range of one field's JSON text within its line.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
    /// A string field whose text has a backslash (it needs unescaping).
    escaped: bool,
}

impl Span {
    /// The field's JSON text.
    fn json(self, line: &str) -> Option<&str> {
        line.get(self.start as usize..self.end as usize)
    }

    /// Write the JSON string at this span into `out`; `None` when it is not a string.
    fn copy_string(self, line: &str, out: &mut String) -> Option<()> {
        let json = self.json(line)?;
        let inner = json.strip_prefix('"')?.strip_suffix('"')?;
        // The reader checked the string; without a backslash its text is its value.
        if self.escaped {
            reuse(out);
            let mut reader = serde_json::Deserializer::from_str(json);
            de::DeserializeSeed::deserialize(AppendTo(out), &mut reader).ok()?;
        } else {
            reuse(out);
            out.push_str(inner);
        }
        Some(())
    }
}

/// Unescapes a JSON string onto the end of a `String` without an intermediate allocation.
struct AppendTo<'o>(&'o mut String);

impl<'de> de::DeserializeSeed<'de> for AppendTo<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for AppendTo<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.0.push_str(value);
        Ok(())
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

/// The event replay folds, refilled line after line so its allocations are reused.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    event: Option<Event>,
    /// Strings of optional fields that were absent on the last line, kept for the next.
    spares: Vec<String>,
}

impl Scratch {
    /// Copy the string fields of `line` that `spans` points at into the reused event and move the
    /// typed ones in. `None` when a string is not one, or the line is a legacy verdict with its
    /// scores under `data`; the caller then reads the line with the strict parser, which says why
    /// or maps it.
    pub fn fill(&mut self, line: &str, spans: &mut LineSpans) -> Option<&Event> {
        let Scratch { event, spares } = self;
        let event = event.get_or_insert_with(|| {
            Draft::new(String::new(), spans.kind).into_event(
                String::new(),
                String::new(),
                String::new(),
            )
        });
        spans.id.copy_string(line, &mut event.id)?;
        spans.ts.copy_string(line, &mut event.ts)?;
        spans.session_id.copy_string(line, &mut event.session_id)?;
        spans.from.copy_string(line, &mut event.from)?;
        event.kind = spans.kind;
        event.step = spans.step;
        fill_string(&mut event.to, spans.to, line, spares)?;
        fill_string(
            &mut event.parent_event_id,
            spans.parent_event_id,
            line,
            spares,
        )?;
        fill_string(&mut event.body, spans.body, line, spares)?;
        event.data = spans.data.take();
        event.artifacts = std::mem::take(&mut spans.artifacts);
        event.scores = spans.scores.take();
        event.metadata = spans.metadata.take();
        if super::legacy::has_data_scores(event) {
            return None;
        }
        Some(event)
    }
}

/// Empty `out` for a new value, letting go of an allocation too big to keep.
fn reuse(out: &mut String) {
    if out.capacity() > MAX_REUSED_CAPACITY {
        *out = String::new();
    }
    out.clear();
}

fn fill_string(
    slot: &mut Option<String>,
    span: Option<Span>,
    line: &str,
    spares: &mut Vec<String>,
) -> Option<()> {
    match span {
        None => {
            if let Some(old) = slot.take()
                && old.capacity() <= MAX_REUSED_CAPACITY
                && spares.len() < MAX_SPARES
            {
                spares.push(old);
            }
            Some(())
        }
        Some(span) => span.copy_string(
            line,
            slot.get_or_insert_with(|| spares.pop().unwrap_or_default()),
        ),
    }
}
