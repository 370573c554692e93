//! Replay's own look at a transcript line: one pass over its bytes that checks it is JSON and notes
//! where each envelope field lies, so a `data` or `body` nobody reads is checked but never built.
//!
//! It accepts only what `serde_json` (the strict parser) accepts, and gives up whenever it is not
//! sure: a control byte anywhere in the line, an unknown, repeated or escaped key, nesting deeper
//! than [`MAX_DEPTH`]. Escaped strings and numbers whose range is in doubt are handed to
//! `serde_json` itself, so its rules decide them. A line it gives up on goes to the strict parser,
//! which says what is wrong with it or maps it.

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::transcript::{Kind, Metadata};

mod metadata_scan;
pub use metadata_scan::metadata;

/// Deepest nesting followed (the line's own object is 1); `serde_json` stops at 128, so a line
/// this deep goes to the strict parser.
pub const MAX_DEPTH: usize = 64;
/// Longest number taken on its grammar alone: shorter ones without an exponent cannot overflow
/// an `f64`, longer ones are range-checked by `serde_json`.
const PLAIN_NUMBER: usize = 300;

/// Where a value lies in the scanned text, and whether a string value holds a backslash.
#[derive(Debug, Clone, Copy)]
pub struct Raw {
    pub start: usize,
    pub end: usize,
    pub escaped: bool,
}

/// The envelope of one line as found: each field's place (an optional field given as `null` is
/// left `None`, as the strict parser leaves it, and noted in `nulls`).
#[derive(Debug, Default)]
pub struct Envelope {
    pub id: Option<Raw>,
    pub ts: Option<Raw>,
    pub session_id: Option<Raw>,
    pub from: Option<Raw>,
    pub kind: Option<Kind>,
    pub to: Option<Raw>,
    pub parent_event_id: Option<Raw>,
    pub step: Option<Raw>,
    pub body: Option<Raw>,
    pub data: Option<Raw>,
    pub artifacts: Option<Raw>,
    pub scores: Option<Raw>,
    pub metadata: Option<Raw>,
    /// `metadata`, when the scan could read it as it went ([`metadata()`]).
    pub metadata_read: Option<Box<Metadata>>,
    /// Some optional field was `null` (the legacy mapping would drop it and say so).
    pub nulls: bool,
}

/// Scan `text` (one line, BOM and CR already cut off) as our envelope; `None` when the strict
/// parser must read it.
pub fn envelope(text: &str) -> Option<Envelope> {
    if has_control_byte(text.as_bytes()) {
        return None;
    }
    let mut c = Cursor { text, pos: 0 };
    let mut env = Envelope::default();
    let mut seen = 0u16;
    c.ws();
    c.eat(b'{')?;
    c.ws();
    if c.eat_if(b'}') {
        return None;
    }
    loop {
        let name = c.envelope_key()?;
        c.ws();
        c.eat(b':')?;
        c.ws();
        let bit = c.field(name, &mut env)?;
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        c.ws();
        match c.next()? {
            b',' => c.ws(),
            b'}' => break,
            _ => return None,
        }
    }
    c.ws();
    (c.pos == text.len()).then_some(env)
}

/// Whether any byte is below 0x20 (a control byte is never inside a JSON string, and between
/// tokens only as whitespace the scan does not bother with). Written to vectorise.
#[allow(
    clippy::needless_bitwise_bool,
    reason = "no early exit, so the loop vectorises"
)]
fn has_control_byte(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |seen, &b| seen | (b < 0x20))
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    /// Spaces only: any other whitespace byte is a control byte, refused up front.
    fn ws(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.eat_if(b).then_some(())
    }

    fn eat_if(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.pos += 1;
        }
        hit
    }

    /// The envelope key here, found by comparing with the names it may be rather than searching
    /// for its end; `None` for any other key (escaped ones included).
    fn envelope_key(&mut self) -> Option<&'static [u8]> {
        let rest = self.text.as_bytes().get(self.pos..)?;
        // Each comparison is with a constant, so it compiles to a few loads, not a `memcmp`.
        let quoted: &'static [u8] = match rest.get(1)? {
            b'i' if rest.starts_with(b"\"id\"") => b"\"id\"",
            b't' if rest.starts_with(b"\"ts\"") => b"\"ts\"",
            b't' if rest.starts_with(b"\"to\"") => b"\"to\"",
            b's' if rest.starts_with(b"\"session_id\"") => b"\"session_id\"",
            b's' if rest.starts_with(b"\"step\"") => b"\"step\"",
            b's' if rest.starts_with(b"\"scores\"") => b"\"scores\"",
            b'f' if rest.starts_with(b"\"from\"") => b"\"from\"",
            b'k' if rest.starts_with(b"\"kind\"") => b"\"kind\"",
            b'p' if rest.starts_with(b"\"parent_event_id\"") => b"\"parent_event_id\"",
            b'b' if rest.starts_with(b"\"body\"") => b"\"body\"",
            b'd' if rest.starts_with(b"\"data\"") => b"\"data\"",
            b'a' if rest.starts_with(b"\"artifacts\"") => b"\"artifacts\"",
            b'm' if rest.starts_with(b"\"metadata\"") => b"\"metadata\"",
            _ => return None,
        };
        self.pos += quoted.len();
        Some(&quoted[1..quoted.len() - 1])
    }

    /// Read the value of envelope field `name` into `env`; the field's bit for the repeat check.
    fn field(&mut self, name: &[u8], env: &mut Envelope) -> Option<u16> {
        // Optional fields: strings, except `data`, `scores` and `metadata`, which are objects.
        let (bit, wants, slot) = match name {
            b"id" => return self.required(&mut env.id, 1),
            b"ts" => return self.required(&mut env.ts, 1 << 1),
            b"session_id" => return self.required(&mut env.session_id, 1 << 2),
            b"from" => return self.required(&mut env.from, 1 << 3),
            b"kind" => {
                let raw = self.string()?;
                if raw.escaped {
                    return None;
                }
                env.kind = Some(self.text[raw.start + 1..raw.end - 1].parse().ok()?);
                return Some(1 << 4);
            }
            b"artifacts" => {
                if self.peek()? != b'[' {
                    return None;
                }
                env.artifacts = Some(self.spanned(1)?);
                return Some(1 << 10);
            }
            b"to" => (1 << 5, b'"', &mut env.to),
            b"parent_event_id" => (1 << 6, b'"', &mut env.parent_event_id),
            b"step" => (1 << 7, b'"', &mut env.step),
            b"body" => (1 << 8, b'"', &mut env.body),
            b"data" => (1 << 9, b'{', &mut env.data),
            b"scores" => (1 << 11, b'{', &mut env.scores),
            b"metadata" => {
                let start = self.pos;
                if self.peek()? == b'{' {
                    if let Some(read) = self.metadata() {
                        env.metadata_read = Some(read);
                        env.metadata = Some(Raw {
                            start,
                            end: self.pos,
                            escaped: false,
                        });
                        return Some(1 << 12);
                    }
                    self.pos = start;
                }
                (1 << 12, b'{', &mut env.metadata)
            }
            _ => return None,
        };
        let null = match self.peek()? {
            b'n' => {
                self.literal(b"null")?;
                true
            }
            b if b == wants => {
                *slot = Some(self.spanned(1)?);
                false
            }
            _ => return None,
        };
        env.nulls |= null;
        Some(bit)
    }

    fn required(&mut self, slot: &mut Option<Raw>, bit: u16) -> Option<u16> {
        *slot = Some(self.string()?);
        Some(bit)
    }

    /// Check the value here (at nesting `depth` of the line) and say where it lies.
    fn spanned(&mut self, depth: usize) -> Option<Raw> {
        let start = self.pos;
        if self.peek()? == b'"' {
            return self.string();
        }
        self.value(depth)?;
        Some(Raw {
            start,
            end: self.pos,
            escaped: false,
        })
    }

    /// A string, its escapes not yet checked (`escaped` says there are some).
    fn string(&mut self) -> Option<Raw> {
        let start = self.pos;
        self.eat(b'"')?;
        let bytes = self.text.as_bytes();
        let mut escaped = false;
        loop {
            self.pos += quote_or_backslash(bytes.get(self.pos..)?)?;
            if bytes[self.pos] == b'"' {
                self.pos += 1;
                return Some(Raw {
                    start,
                    end: self.pos,
                    escaped,
                });
            }
            // A backslash and the byte it escapes; `serde_json` checks the escape later.
            escaped = true;
            self.pos += 2;
        }
    }

    /// Any JSON value inside an object or array at nesting `depth`.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => {
                let raw = self.string()?;
                if raw.escaped && !valid_string(&self.text[raw.start..raw.end]) {
                    return None;
                }
            }
            b'{' => self.object(depth + 1)?,
            b'[' => self.array(depth + 1)?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        }
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        self.ws();
        if self.eat_if(b'}') {
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            self.value(depth)?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            self.value(depth)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.ws();
        if self.eat_if(b']') {
            return Some(());
        }
        loop {
            self.value(depth)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos + word.len();
        (self.text.as_bytes().get(self.pos..end)? == word).then(|| self.pos = end)
    }

    /// A number by JSON's grammar; `serde_json` parses one with an exponent, or a long one, to
    /// refuse what overflows as it would.
    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        self.eat_if(b'-');
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.eat_if(b'.') && self.digits() == 0 {
            return None;
        }
        let mut exponent = false;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
            exponent = true;
        }
        if exponent || self.pos - start > PLAIN_NUMBER {
            serde_json::from_str::<serde_json::Number>(&self.text[start..self.pos]).ok()?;
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }
}

/// Where the first `"` or `\\` is. Most strings here are short (keys, ids, timestamps), where
/// `memchr`'s set-up costs more than the search: up to 32 bytes eight at a time, then `memchr`.
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let head = bytes.len().min(32);
    for (index, chunk) in bytes[..head].chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(chunk.try_into().ok()?);
        let quote = word ^ (ONES * u64::from(b'"'));
        let slash = word ^ (ONES * u64::from(b'\\'));
        // The lowest byte that is zero in either is exact (a borrow only spoils bytes above it).
        let hit =
            ((quote.wrapping_sub(ONES) & !quote) | (slash.wrapping_sub(ONES) & !slash)) & HIGH;
        if hit != 0 {
            return Some(index * 8 + (hit.trailing_zeros() / 8) as usize);
        }
    }
    let at = head - head % 8;
    let rest = &bytes[at..];
    if rest.len() > 16 {
        memchr::memchr2(b'"', b'\\', rest)
    } else {
        rest.iter().position(|&b| b == b'"' || b == b'\\')
    }
    .map(|i| at + i)
}

/// Whether a JSON string with escapes is one `serde_json` reads as a `str` (valid escapes, no
/// lone surrogate).
fn valid_string(json: &str) -> bool {
    serde_json::from_str::<StrShape>(json).is_ok()
}

/// A JSON string checked exactly as a `String` would be read, without keeping it.
struct StrShape;

impl<'de> Deserialize<'de> for StrShape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(StrShape)
    }
}

impl Visitor<'_> for StrShape {
    type Value = StrShape;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<StrShape, E> {
        Ok(StrShape)
    }
}

#[cfg(test)]
mod tests {
    use super::envelope;

    /// What `serde_json` makes of a line as a `Value`, next to whether the scan accepts it.
    fn agrees(line: &str) {
        let strict = serde_json::from_str::<serde_json::Value>(line).is_ok();
        if envelope(line).is_some() {
            assert!(strict, "the scan accepted what serde_json refuses: {line}");
        }
    }

    #[test]
    fn the_scan_never_accepts_json_serde_refuses() {
        let head = r#"{"id":"a","ts":"t","session_id":"s","from":"f","kind":"note""#;
        for tail in [
            r#","data":{"n":1e400}}"#,
            r#","data":{"n":1e308}}"#,
            r#","data":{"n":01}}"#,
            r#","data":{"n":-}}"#,
            r#","data":{"n":1.}}"#,
            r#","data":{"n":.5}}"#,
            r#","data":{"s":"\ud800"}}"#,
            r#","data":{"s":"\ud83d\ude00"}}"#,
            r#","data":{"s":"\x"}}"#,
            r#","data":{"a":[1,]}}"#,
            r#","data":{"a":tru}}"#,
            r#","data":{"a":1,}}"#,
            r#","body":"a\"b"}"#,
            r"}}",
            r"} x",
            r#","data":{"a":{"b":[{}]}}}"#,
        ] {
            agrees(&format!("{head}{tail}"));
        }
        let deep = format!("{head},\"data\":{}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(envelope(&deep).is_none());
        assert!(envelope(&format!("{head},\"data\":{{\"n\":1e5}}}}")).is_some());
        assert!(envelope(&format!("{head},\"to\":null}}")).is_some_and(|e| e.nulls));
        assert!(envelope(&format!("{head},\"id\":\"again\"}}")).is_none());
        assert!(envelope(&format!("{head},\"extra\":1}}")).is_none());
        assert!(envelope(&format!("{head},\t\"to\":\"x\"}}")).is_none());
    }
}
