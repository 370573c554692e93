//! Replay's fast way to read a transcript line, in two halves that may run on different threads.
//!
//! [`spans`] scans the line ([`super::scan`]: one pass that checks it and notes where each field's
//! JSON text lies), builds the typed fields (`scores`, `metadata`, `artifacts`, the `data` the
//! engine reads) into a [`LineSpans`]. [`Scratch::fill`] later copies the strings into one
//! [`Event`] reused for every line and moves the typed fields in. Replay reads lines on worker
//! threads and folds on one, so all the parsing happens on the workers and the folding thread
//! only copies and folds.
//!
//! The fast path folds exactly the lines the strict parser ([`super::parse::parse_line`]) folds, to
//! the same events: whatever it is unsure of (an unknown key, a string that is not a string,
//! metadata with an unknown key, a legacy verdict with its scores under `data` …) makes it give
//! up, so the line goes to the strict parser. The one legacy shape it maps itself is the
//! reference's verdict ([`super::legacy_scores`]). `data` is built only for kinds whose `data` the
//! engine reads for the session's pipeline (see [`super::payload::reads_data_for`]); most lines of
//! a long transcript carry a payload nothing routes on.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

use super::legacy_scores::Read;
use super::scan::{self, Raw};
use crate::transcript::{ArtifactRef, Data, Draft, Event, Kind, Metadata, Scores, Step};

/// Longest string kept for reuse between lines; a bigger one is freed instead of held on to.
const MAX_REUSED_CAPACITY: usize = 64 * 1024;
/// Spare strings kept for optional fields.
const MAX_SPARES: usize = 8;

/// Where the fields of `text` lie in `line`, the line `text` was cut from, building `data` only
/// for the kinds `reads_data` names; `None` when the strict parser must read the line.
pub fn spans(line: &str, text: &str, reads_data: impl Fn(Kind) -> bool) -> Option<LineSpans> {
    let env = scan::envelope(text)?;
    let kind = env.kind?;
    let json = |raw: Raw| &text[raw.start..raw.end];
    let step = match env.step {
        Some(raw) => Some(serde_json::from_str::<Step>(json(raw)).ok()?),
        None => None,
    };
    let artifacts: Vec<ArtifactRef> = match env.artifacts {
        Some(raw) => serde_json::from_str(json(raw)).ok()?,
        None => Vec::new(),
    };
    let metadata = match (env.metadata_read, env.metadata) {
        (Some(read), _) => Some(read),
        (None, Some(raw)) => Some(serde_json::from_str::<Box<Metadata>>(json(raw)).ok()?),
        (None, None) => None,
    };
    let (scores, mapped) = match env.scores {
        Some(raw) => match super::legacy_scores::read_scores(json(raw)) {
            Some(Read::Ours(scores)) => (Some(Box::new(scores)), None),
            // The legacy verdict shape, mapped here when nothing else in the line needs the
            // mapping (no `null` it would drop, only artifacts it keeps).
            Some(Read::Mapped(scores, changes)) => {
                if env.nulls
                    || !artifacts
                        .iter()
                        .all(|a| super::legacy::valid_sha256(&a.sha256))
                {
                    return None;
                }
                (Some(Box::new(scores)), Some(changes))
            }
            None => (
                Some(serde_json::from_str::<Box<Scores>>(json(raw)).ok()?),
                None,
            ),
        },
        None => (None, None),
    };
    // `data` is built only where the engine reads it (here, on the reading thread, so the folding
    // thread only moves it); the scan has checked it everywhere.
    let data: Option<Data> = match env.data {
        Some(raw) if reads_data(kind) => Some(serde_json::from_str(json(raw)).ok()?),
        _ => None,
    };
    // A legacy verdict with its scores under `data` is mapped by the strict parser.
    if scores.is_none()
        && super::legacy::data_scores_kind(kind)
        && data
            .as_ref()
            .is_some_and(|d| d.get("scores").is_some_and(serde_json::Value::is_object))
    {
        return None;
    }
    let base = text.as_ptr().addr().checked_sub(line.as_ptr().addr())?;
    let span = |raw: Raw| -> Option<Span> {
        Some(Span {
            start: u32::try_from(base.checked_add(raw.start)?).ok()?,
            end: u32::try_from(base.checked_add(raw.end)?).ok()?,
            escaped: raw.escaped,
        })
    };
    let optional = |raw: Option<Raw>| -> Option<Option<Span>> {
        raw.map_or(Some(None), |raw| span(raw).map(Some))
    };
    Some(LineSpans {
        id: span(env.id?)?,
        ts: span(env.ts?)?,
        session_id: span(env.session_id?)?,
        from: span(env.from?)?,
        kind,
        step,
        to: optional(env.to)?,
        parent_event_id: optional(env.parent_event_id)?,
        body: optional(env.body)?,
        data,
        artifacts,
        scores,
        metadata,
        mapped,
    })
}

/// Where a line's string fields lie in it, as [`spans`] found them, and its typed
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
    /// A legacy line mapped on the way ([`super::legacy_scores`]): what the mapping changed.
    mapped: Option<Vec<String>>,
}

impl LineSpans {
    /// What the legacy mapping changed, for a line read in a legacy shape.
    pub fn mapped(&mut self) -> Option<Vec<String>> {
        self.mapped.take()
    }
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

/// The event replay folds, refilled line after line so its allocations are reused.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    event: Option<Event>,
    /// Strings of optional fields that were absent on the last line, kept for the next.
    spares: Vec<String>,
}

impl Scratch {
    /// Copy the string fields of `line` that `spans` points at into the reused event and swap the
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
        // Swapped, not moved: what the last event held goes back into `spans`, to be freed with
        // its batch (off the folding thread) rather than here.
        std::mem::swap(&mut event.data, &mut spans.data);
        std::mem::swap(&mut event.artifacts, &mut spans.artifacts);
        std::mem::swap(&mut event.scores, &mut spans.scores);
        std::mem::swap(&mut event.metadata, &mut spans.metadata);
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
