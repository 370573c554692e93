//! Splitting a byte stream into lines without unbounded buffering.

/// Longest line kept whole; a longer one is delivered in pieces of this size (agent CLIs can emit
/// multi-megabyte JSON lines, which must not stall the stream nor exhaust memory).
pub(super) const MAX_LINE_BYTES: usize = 8 << 20;

/// Accumulates bytes and yields complete lines (without `\n` or a trailing `\r`).
#[derive(Debug, Default)]
pub(super) struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    /// Feed bytes; returns the lines they completed.
    pub(super) fn push(&mut self, mut bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        while let Some(at) = bytes.iter().position(|&byte| byte == b'\n') {
            self.partial.extend_from_slice(&bytes[..at]);
            lines.push(trim_cr(std::mem::take(&mut self.partial)));
            bytes = &bytes[at + 1..];
        }
        self.partial.extend_from_slice(bytes);
        while self.partial.len() >= MAX_LINE_BYTES {
            let rest = self.partial.split_off(MAX_LINE_BYTES);
            lines.push(std::mem::replace(&mut self.partial, rest));
        }
        lines
    }

    /// The last line, if the stream ended without a newline.
    pub(super) fn finish(self) -> Option<Vec<u8>> {
        (!self.partial.is_empty()).then(|| trim_cr(self.partial))
    }
}

fn trim_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_across_chunks() {
        let mut splitter = LineSplitter::default();
        assert!(splitter.push(b"ab").is_empty());
        assert_eq!(
            splitter.push(b"c\r\nd\n\ne"),
            [b"abc".to_vec(), b"d".to_vec(), Vec::new()]
        );
        assert_eq!(splitter.finish(), Some(b"e".to_vec()));
    }

    #[test]
    fn oversized_lines_are_cut() {
        let mut splitter = LineSplitter::default();
        let lines = splitter.push(&vec![b'x'; MAX_LINE_BYTES * 2 + 5]);
        assert_eq!(lines.len(), 2);
        assert_eq!(splitter.finish().map(|rest| rest.len()), Some(5));
    }

    proptest::proptest! {
        #[test]
        fn chunking_does_not_change_lines(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), cut in 0usize..300) {
            let cut = cut.min(data.len());
            let mut whole = LineSplitter::default();
            let mut expected = whole.push(&data);
            expected.extend(whole.finish());
            let mut split = LineSplitter::default();
            let mut got = split.push(&data[..cut]);
            got.extend(split.push(&data[cut..]));
            got.extend(split.finish());
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
