//! The summary of a line too long to send whole: a line of more than [`LARGE_LINE_BYTES`] goes to
//! each stream and each events page as its envelope, the body's first [`HEAD_BYTES`], `truncated`,
//! its size and a link to the full line ([`super::large_event`] serves it).
//!
//! The summary's parts are taken once, when the index records the line (its bytes are in memory
//! then anyway), and kept in the index; nothing else of the line is kept.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Lines longer than this (1 MiB) are sent as a summary.
pub(crate) const LARGE_LINE_BYTES: u32 = 1024 * 1024;
/// How much of a large line's body its summary carries (4 KiB).
pub(crate) const HEAD_BYTES: usize = 4 * 1024;
/// Longest `ts` or `session_id` a summary repeats (a hostile line may make them huge).
const FIELD_BYTES: usize = 64;

/// What a summary says beyond what the index keeps for every line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LargeLine {
    pub ts: Option<String>,
    pub session_id: Option<String>,
    /// The body's first [`HEAD_BYTES`]: a string body decoded, any other body as JSON text.
    pub head: String,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    ts: Option<Cow<'a, str>>,
    #[serde(borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    body: Option<&'a RawValue>,
}

impl LargeLine {
    /// The summary parts of one event line (without its newline); nothing is copied but them.
    pub(crate) fn of(line: &[u8]) -> LargeLine {
        let envelope = serde_json::from_slice::<Envelope<'_>>(line).ok();
        let short = |field: Option<Cow<'_, str>>| field.map(|f| prefix(&f, FIELD_BYTES).to_owned());
        match envelope {
            Some(envelope) => LargeLine {
                ts: short(envelope.ts),
                session_id: short(envelope.session_id),
                head: envelope.body.map(|raw| head(raw.get())).unwrap_or_default(),
            },
            None => LargeLine {
                ts: None,
                session_id: None,
                head: String::new(),
            },
        }
    }

    /// The summary as JSON text, as a stream or a page sends it in the event's place.
    pub(crate) fn summary(
        &self,
        id: &str,
        bytes: u32,
        kind: &str,
        from: &str,
        session: &str,
    ) -> String {
        serde_json::json!({
            "id": id,
            "ts": self.ts,
            "session_id": self.session_id,
            "from": from,
            "kind": kind,
            "body": self.head,
            "truncated": true,
            "bytes": bytes,
            "full": format!("/api/sessions/{session}/events/{id}"),
        })
        .to_string()
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The first [`HEAD_BYTES`] of a body given as raw JSON: a string decoded (cut before an escape
/// that does not fit), anything else as its JSON text.
fn head(raw: &str) -> String {
    let cut = prefix(raw, HEAD_BYTES + 1);
    if !raw.starts_with('"') {
        return prefix(cut, HEAD_BYTES).to_owned();
    }
    if cut.len() == raw.len() {
        return serde_json::from_str(raw).unwrap_or_default();
    }
    // An escape is at most 12 bytes (`\uD83D\uDE00`): one of the last cuts closes cleanly.
    (0..=12)
        .filter_map(|back| {
            let end = cut.len().checked_sub(back)?;
            cut.is_char_boundary(end).then(|| &cut[..end])
        })
        .find_map(|piece| serde_json::from_str::<String>(&format!("{piece}\"")).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{HEAD_BYTES, LargeLine, head};

    #[test]
    fn a_string_body_is_cut_on_a_whole_character_and_escape() {
        let body: String = "é\\n\\u00e9\\\"x".repeat(2000);
        let raw = format!("\"{body}\"");
        let got = head(&raw);
        assert!(!got.is_empty() && got.len() <= HEAD_BYTES);
        let whole: String = serde_json::from_str(&raw).unwrap();
        assert!(whole.starts_with(&got));
    }

    #[test]
    fn any_other_body_is_its_json_text() {
        let raw = format!("[{}1]", "1,".repeat(5000));
        assert_eq!(head(&raw).len(), HEAD_BYTES);
        assert_eq!(head("{\"a\":1}"), "{\"a\":1}");
    }

    #[test]
    fn the_envelope_is_kept_short() {
        let line = format!(
            "{{\"id\":\"x\",\"ts\":\"{}\",\"from\":\"a\",\"kind\":\"k\",\"body\":\"hi\"}}",
            "9".repeat(1000)
        );
        let large = LargeLine::of(line.as_bytes());
        assert_eq!(large.ts.map(|t| t.len()), Some(64));
        assert_eq!(large.head, "hi");
        assert_eq!(LargeLine::of(b"not json").head, "");
    }
}
