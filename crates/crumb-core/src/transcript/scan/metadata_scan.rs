//! `metadata` read by the scan as it goes ([`metadata()`]): the typed fields serde's derived
//! `Metadata` has, read straight from the line, so replay needs no second pass over it.

use super::Cursor;
use crate::transcript::Metadata;
use crate::transcript::event_metadata::{EvidenceKind, Visibility};

/// `metadata` (its JSON text, checked by the scan) read as serde's derived `Metadata` reads it,
/// without serde's field-by-field matching; `None` leaves it to serde (an escaped, repeated or
/// unknown key, a value of another type), which then says whether it is one.
pub fn metadata(json: &str) -> Option<Box<Metadata>> {
    let mut c = Cursor { text: json, pos: 0 };
    let m = c.metadata()?;
    c.ws();
    (c.pos == json.len()).then_some(m)
}

impl Cursor<'_> {
    /// The `metadata` object here (see [`metadata()`]), the cursor left after it.
    pub(super) fn metadata(&mut self) -> Option<Box<Metadata>> {
        let c = self;
        let json = c.text;
        let mut m = Box::new(Metadata::default());
        let mut seen = 0u32;
        c.eat(b'{')?;
        c.ws();
        if c.eat_if(b'}') {
            return Some(m);
        }
        loop {
            let key = c.string()?;
            if key.escaped {
                return None;
            }
            c.ws();
            c.eat(b':')?;
            c.ws();
            let bit = match &json[key.start + 1..key.end - 1] {
                "visibility" => {
                    m.visibility = c.nullable(|c| match c.plain_str()? {
                        "public" => Some(Visibility::Public),
                        "private" => Some(Visibility::Private),
                        _ => None,
                    })?;
                    0
                }
                "harness" => c.put(&mut m.harness, 1)?,
                "provider" => c.put(&mut m.provider, 2)?,
                "model" => c.put(&mut m.model, 3)?,
                "adapter_session_id" => c.put(&mut m.adapter_session_id, 4)?,
                "tool" => c.put(&mut m.tool, 5)?,
                "deterministic" => {
                    m.deterministic = c.nullable(Cursor::boolean)?;
                    6
                }
                "effect_id" => c.put(&mut m.effect_id, 7)?,
                "cross_provider" => {
                    m.cross_provider = c.nullable(Cursor::boolean)?;
                    8
                }
                "evidence_kind" => {
                    m.evidence_kind = c.nullable(|c| match c.plain_str()? {
                        "video" => Some(EvidenceKind::Video),
                        "screenshot" => Some(EvidenceKind::Screenshot),
                        "text" => Some(EvidenceKind::Text),
                        _ => None,
                    })?;
                    9
                }
                "turn" => c.count(&mut m.turn, 10)?,
                "tokens_in" => c.count(&mut m.tokens_in, 11)?,
                "tokens_out" => c.count(&mut m.tokens_out, 12)?,
                "thinking_tokens" => c.count(&mut m.thinking_tokens, 13)?,
                "cache_read" => c.count(&mut m.cache_read, 14)?,
                "cache_write" => c.count(&mut m.cache_write, 15)?,
                "cost_usd" => {
                    m.cost_usd = c.nullable(|c| {
                        let token = c.number_token()?;
                        serde_json::from_str::<f64>(token).ok()
                    })?;
                    16
                }
                "latency_ms" => c.count(&mut m.latency_ms, 17)?,
                "ack_for" => c.put(&mut m.ack_for, 18)?,
                "in_reply_to" => c.put(&mut m.in_reply_to, 19)?,
                "consumed_intervene_ids" => {
                    m.consumed_intervene_ids = c.strings()?;
                    20
                }
                "audit_violations" => {
                    m.audit_violations = c.strings()?;
                    21
                }
                _ => return None,
            };
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            c.ws();
            match c.next()? {
                b',' => c.ws(),
                b'}' => return Some(m),
                _ => return None,
            }
        }
    }
}

impl<'a> Cursor<'a> {
    /// `null` as `None` (what serde makes of it for an `Option` field), else `read`; the outer
    /// `None` gives up.
    #[allow(
        clippy::option_option,
        reason = "giving up and reading `null` are different"
    )]
    fn nullable<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        read(self).map(Some)
    }

    fn put(&mut self, slot: &mut Option<String>, bit: u32) -> Option<u32> {
        *slot = self.nullable(Cursor::owned_string)?;
        Some(bit)
    }

    /// A `u64` as serde reads one: a whole, non-negative number in range.
    fn count(&mut self, slot: &mut Option<u64>, bit: u32) -> Option<u32> {
        *slot = self.nullable(|c| {
            let token = c.number_token()?;
            if token.bytes().all(|b| b.is_ascii_digit()) {
                token.parse().ok()
            } else {
                None
            }
        })?;
        Some(bit)
    }

    fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| true),
            b'f' => self.literal(b"false").map(|()| false),
            _ => None,
        }
    }

    /// A string without escapes, borrowed.
    fn plain_str(&mut self) -> Option<&'a str> {
        let raw = self.string()?;
        (!raw.escaped).then(|| &self.text[raw.start + 1..raw.end - 1])
    }

    /// A string, unescaped (by `serde_json`, which also checks the escapes).
    fn owned_string(&mut self) -> Option<String> {
        let raw = self.string()?;
        if raw.escaped {
            serde_json::from_str(&self.text[raw.start..raw.end]).ok()
        } else {
            Some(self.text[raw.start + 1..raw.end - 1].to_owned())
        }
    }

    /// An array of strings (not `null`: serde refuses it for a `Vec`).
    fn strings(&mut self) -> Option<Vec<String>> {
        self.eat(b'[')?;
        self.ws();
        let mut out = Vec::new();
        if self.eat_if(b']') {
            return Some(out);
        }
        loop {
            out.push(self.owned_string()?);
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return Some(out),
                _ => return None,
            }
        }
    }

    fn number_token(&mut self) -> Option<&'a str> {
        let start = self.pos;
        if !matches!(self.peek()?, b'-' | b'0'..=b'9') {
            return None;
        }
        self.number()?;
        Some(&self.text[start..self.pos])
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::transcript::Metadata;

    proptest! {
        /// The hand-read `metadata` is serde's, or leaves the object to serde.
        #[test]
        fn metadata_reads_as_serde_reads_it(
            json in r#"\{(("(visibility|harness|tool|deterministic|turn|tokens_in|cost_usd|evidence_kind|audit_violations|x|t\\u0075rn)"):(null|"(public|private|text|a\\"b|\\ud800|x)"|true|false|-?(0|1|01|18446744073709551616|2\.5|1e3|1e400)|\[("a"|"b\\n"|1)?\]|\{\}) ?, ?){0,6}("turn":1)?\}"#
        ) {
            let ours = super::metadata(&json);
            let serde = serde_json::from_str::<Box<Metadata>>(&json).ok();
            if let Some(ours) = ours {
                prop_assert_eq!(Some(ours), serde, "{}", json);
            }
        }
    }
}
