//! Positions as LSP counts them (lines from 0, columns in UTF-16 code units) against the byte
//! offsets and 1-based character columns the compiler speaks. A position the client gets wrong
//! (past the end of a line or of the text, inside a surrogate pair) is clamped, never trusted.

use crumb_core::pipeline::located_yaml::Span;
use lsp_types::{Position, Range};

/// The byte offset of every line start of one text.
pub(crate) struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        Lines { text, starts }
    }

    /// The text of line `line` (0-based) without its line break; empty past the end.
    pub(crate) fn line(&self, line: usize) -> &'a str {
        let Some(&start) = self.starts.get(line) else {
            return "";
        };
        let end = self
            .starts
            .get(line + 1)
            .map_or(self.text.len(), |&e| e - 1);
        self.text[start..end.max(start)].trim_end_matches('\r')
    }

    /// The byte offset of `position`, clamped into the text and onto a character boundary.
    pub(crate) fn offset(&self, position: Position) -> usize {
        let line = position.line as usize;
        let Some(&start) = self.starts.get(line) else {
            return self.text.len();
        };
        let mut units = 0u32;
        for (i, c) in self.line(line).char_indices() {
            let width = u32::try_from(c.len_utf16()).unwrap_or(1);
            if units + width > position.character {
                return start + i;
            }
            units += width;
        }
        start + self.line(line).len()
    }

    /// The position of byte offset `offset` (clamped, rounded down to a character boundary).
    pub(crate) fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let units: usize = self.text[self.starts[line]..offset]
            .chars()
            .map(char::len_utf16)
            .sum();
        Position::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(units).unwrap_or(u32::MAX),
        )
    }

    /// The byte offset of a compiler span's start (1-based line, 1-based character column).
    pub(crate) fn span_start(&self, span: Span) -> usize {
        let line = (span.line as usize).saturating_sub(1);
        let Some(&start) = self.starts.get(line) else {
            return self.text.len();
        };
        let col = (span.col as usize).saturating_sub(1);
        start
            + self
                .line(line)
                .char_indices()
                .nth(col)
                .map_or(self.line(line).len(), |(i, _)| i)
    }

    /// The byte range a compiler span covers (its length counted in characters).
    pub(crate) fn span_bytes(&self, span: Span) -> std::ops::Range<usize> {
        let start = self.span_start(span);
        let len: usize = self.text[start..]
            .chars()
            .take(span.len as usize)
            .map(char::len_utf8)
            .sum();
        start..start + len
    }

    /// The LSP range of a compiler span.
    pub(crate) fn span_range(&self, span: Span) -> Range {
        let bytes = self.span_bytes(span);
        Range::new(self.position(bytes.start), self.position(bytes.end))
    }

    /// The LSP range of a byte range.
    pub(crate) fn range(&self, bytes: std::ops::Range<usize>) -> Range {
        Range::new(self.position(bytes.start), self.position(bytes.end))
    }
}

/// The run of characters `part` accepts around byte `offset`, and where it is.
pub(crate) fn word_at(
    text: &str,
    offset: usize,
    part: impl Fn(char) -> bool,
) -> Option<(&str, std::ops::Range<usize>)> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|(_, c)| part(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = offset
        + text[offset..]
            .char_indices()
            .find(|(_, c)| !part(*c))
            .map_or(text.len() - offset, |(i, _)| i);
    (start < end).then(|| (&text[start..end], start..end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_count_surrogate_pairs_and_clamp() {
        let text = "a: \u{1F600}x\nb: é\n";
        let lines = Lines::new(text);
        // The emoji is two UTF-16 units: `x` is at column 5.
        assert_eq!(&text[lines.offset(Position::new(0, 5))..][..1], "x");
        // Inside the surrogate pair rounds down to the emoji itself.
        assert_eq!(lines.offset(Position::new(0, 4)), 3);
        // Past the line's end stops at the line break; past the text, at its end.
        assert_eq!(lines.offset(Position::new(0, 99)), text.find('\n').unwrap());
        assert_eq!(lines.offset(Position::new(99, 0)), text.len());
        assert_eq!(lines.position(text.find('x').unwrap()), Position::new(0, 5));
        let span = Span {
            line: 2,
            col: 4,
            len: 1,
            file: 0,
        };
        assert_eq!(
            lines.span_range(span),
            Range::new(Position::new(1, 3), Position::new(1, 4))
        );
    }
}
