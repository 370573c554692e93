//! A small, tolerant HTML scanner: enough structure for lint checks, never a panic.
//!
//! It finds the doctype, start tags with their attributes, and the raw text of `<script>` elements,
//! and reports the few things that make a document unparseable in practice (an unterminated
//! comment, tag or script). It does not build a tree: the browser check is the real parser; this
//! one only has to be honest about what it saw. Byte-oriented and linear, so hostile input costs
//! at most one pass.

/// A start tag as written (name lower-cased, attribute names lower-cased, values unescaped only of
/// quotes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tag {
    pub name: String,
    pub attrs: Vec<(String, String)>,
}

impl Tag {
    /// The value of attribute `name`, if present.
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A `<script>` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Script {
    pub src: Option<String>,
    /// The inline body, trimmed.
    pub body_len: usize,
}

/// What the scanner saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The doctype's content, e.g. `html`, if the document starts with one.
    pub doctype: Option<String>,
    pub tags: Vec<Tag>,
    pub scripts: Vec<Script>,
    /// Structural problems, e.g. "unterminated comment starting at byte 120".
    pub errors: Vec<String>,
}

/// Upper bound on tags recorded, so a hostile file cannot grow the result without limit.
const MAX_TAGS: usize = 100_000;

/// Scan `html`.
pub(crate) fn scan(html: &str) -> Scan {
    let bytes = html.as_bytes();
    let mut out = Scan::default();
    let mut i = 0;
    let mut seen_content = false;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            if !bytes[i].is_ascii_whitespace() {
                seen_content = true;
            }
            i += 1;
            continue;
        }
        let rest = &bytes[i..];
        if rest.starts_with(b"<!--") {
            let Some(end) = find(bytes, i + 4, b"-->") else {
                out.errors
                    .push(format!("unterminated comment starting at byte {i}"));
                break;
            };
            i = end + 3;
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            let Some(end) = find(bytes, i + 2, b">") else {
                out.errors
                    .push(format!("unterminated declaration starting at byte {i}"));
                break;
            };
            let inner = &html[i + 2..end];
            if let Some(kind) = strip_prefix_ci(inner, "doctype")
                && !seen_content
                && out.tags.is_empty()
                && out.doctype.is_none()
            {
                out.doctype = Some(kind.trim().to_ascii_lowercase());
            }
            seen_content = true;
            i = end + 1;
            continue;
        }
        if rest.starts_with(b"</") {
            let Some(end) = find(bytes, i + 2, b">") else {
                out.errors
                    .push(format!("unterminated end tag starting at byte {i}"));
                break;
            };
            i = end + 1;
            continue;
        }
        if rest.len() < 2 || !rest[1].is_ascii_alphabetic() {
            // A literal `<` in text, as browsers treat it.
            seen_content = true;
            i += 1;
            continue;
        }
        seen_content = true;
        let Some((tag, end)) = parse_tag(html, i + 1) else {
            out.errors
                .push(format!("unterminated tag starting at byte {i}"));
            break;
        };
        i = end;
        if tag.name == "script" || tag.name == "style" {
            let close = if tag.name == "script" {
                "</script"
            } else {
                "</style"
            };
            let Some(close_at) = find_ci(bytes, i, close.as_bytes()) else {
                out.errors.push(format!(
                    "<{}> starting at byte {} is never closed",
                    tag.name, i
                ));
                push_tag(&mut out, tag);
                break;
            };
            if tag.name == "script" {
                let body_len = html[i..close_at].trim().len();
                out.scripts.push(Script {
                    src: tag.attr("src").map(str::to_owned),
                    body_len,
                });
            }
            i = find(bytes, close_at, b">").map_or(bytes.len(), |e| e + 1);
        }
        push_tag(&mut out, tag);
    }
    out
}

fn push_tag(out: &mut Scan, tag: Tag) {
    if out.tags.len() < MAX_TAGS {
        out.tags.push(tag);
    }
}

/// Parse a start tag whose name begins at `start` (just after `<`). Returns the tag and the index
/// just past its `>`.
fn parse_tag(html: &str, start: usize) -> Option<(Tag, usize)> {
    let bytes = html.as_bytes();
    let mut i = start;
    while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' && bytes[i] != b'/'
    {
        i += 1;
    }
    let name = html.get(start..i)?.to_ascii_lowercase();
    let mut attrs = Vec::new();
    loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        if bytes[i] == b'>' {
            return Some((Tag { name, attrs }, i + 1));
        }
        let key_start = i;
        while i < bytes.len()
            && !bytes[i].is_ascii_whitespace()
            && !matches!(bytes[i], b'=' | b'>' | b'/')
        {
            i += 1;
        }
        let key = html.get(key_start..i)?.to_ascii_lowercase();
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') {
                let quote = bytes[i];
                let end = bytes[i + 1..].iter().position(|&b| b == quote)? + i + 1;
                html.get(i + 1..end)?.clone_into(&mut value);
                i = end + 1;
            } else {
                let v_start = i;
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                    i += 1;
                }
                html.get(v_start..i)?.clone_into(&mut value);
            }
        }
        if !key.is_empty() && attrs.len() < 256 {
            attrs.push((key, value));
        }
    }
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn find_ci(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| p + from)
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_small_game_page() {
        let s = scan(
            "<!DOCTYPE html>\n<html><head><meta name=\"viewport\" content=\"width=device-width\">\
             <!-- a <script> in a comment --><style>a<b{}</style></head>\
             <body><canvas id=c></canvas><script src='game.js'></script><script>let a = 1 < 2;</script></body></html>",
        );
        assert_eq!(s.doctype.as_deref(), Some("html"));
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert_eq!(s.scripts.len(), 2);
        assert_eq!(s.scripts[0].src.as_deref(), Some("game.js"));
        assert!(s.scripts[1].body_len > 0);
        let meta = s.tags.iter().find(|t| t.name == "meta").unwrap();
        assert_eq!(meta.attr("name"), Some("viewport"));
        assert!(s.tags.iter().any(|t| t.name == "canvas"));
    }

    #[test]
    fn reports_unterminated_constructs() {
        assert!(!scan("<!doctype html><!-- never closed").errors.is_empty());
        assert!(!scan("<!doctype html><script>while(1){}").errors.is_empty());
        assert!(!scan("<!doctype html><div class=\"x").errors.is_empty());
        assert_eq!(scan("<p>hello</p><!doctype html>").doctype, None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(input in "\\PC{0,400}") {
            let _ = scan(&input);
        }

        #[test]
        fn never_panics_on_tag_soup(input in "[<>!/a-z=\"' -]{0,300}") {
            let s = scan(&input);
            proptest::prop_assert!(s.tags.len() <= input.len());
        }
    }
}
