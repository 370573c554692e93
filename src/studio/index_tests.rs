//! The line index's tests: appends in any split, hostile bytes, batches, a replaced file, an
//! oversized line, and an index kept on disk against one built in memory.

use std::io::Write;

use proptest::prelude::*;

use super::*;

/// A piece of a transcript: an event line, or something that is not one.
#[derive(Debug, Clone)]
enum Piece {
    Event { kind: u8, from: u8, crlf: bool },
    Garbage(Vec<u8>),
    Blank,
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        6 => (0u8..4, 0u8..3, any::<bool>()).prop_map(|(kind, from, crlf)| Piece::Event { kind, from, crlf }),
        1 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..40).prop_map(Piece::Garbage),
        1 => Just(Piece::Blank),
    ]
}

/// The file's bytes and the ids of its events, in order.
fn render(pieces: &[Piece]) -> (Vec<u8>, Vec<String>) {
    let mut generator = ulid::Generator::new();
    let mut bytes = Vec::new();
    let mut ids = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Event { kind, from, crlf } => {
                let id = generator.generate().unwrap().to_string();
                let line = format!(
                    r#"{{"id":"{id}","ts":"2026-11-30T09:00:00.000Z","session_id":"s","from":"role{from}","kind":"kind.{kind}","body":"é\n"}}"#
                );
                bytes.extend_from_slice(line.as_bytes());
                bytes.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
                ids.push(id);
            }
            Piece::Garbage(junk) => {
                bytes.extend_from_slice(junk);
                bytes.push(b'\n');
            }
            Piece::Blank => bytes.extend_from_slice(b"  \n"),
        }
    }
    (bytes, ids)
}

fn snapshot(index: &LineIndex) -> Vec<(String, String, String, u64, u32)> {
    index
        .lines()
        .iter()
        .map(|l| {
            (
                l.id().to_owned(),
                index.name(l.kind).to_owned(),
                index.name(l.from).to_owned(),
                l.offset,
                l.len,
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn appends_in_any_split_index_like_one_read(pieces in proptest::collection::vec(piece(), 0..40), cuts in proptest::collection::vec(any::<u16>(), 0..8)) {
        let (bytes, ids) = render(&pieces);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, b"").unwrap();
        let mut index = LineIndex::new(&path);
        let mut cuts: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % (bytes.len() + 1)).collect();
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let mut at = 0;
        for cut in cuts {
            file.write_all(&bytes[at..cut]).unwrap();
            at = cut;
            let extension = index.extend().unwrap();
            prop_assert!(!extension.truncated);
        }
        let mut whole = LineIndex::new(&path);
        whole.extend().unwrap();
        prop_assert_eq!(snapshot(&index), snapshot(&whole));
        let got: Vec<String> = index.lines().iter().map(|l| l.id().to_owned()).collect();
        prop_assert_eq!(&got, &ids);
        // Every offset and length points at exactly the event's text.
        let texts = read_lines(&path, &index.lines()).unwrap();
        for (line, text) in index.lines().iter().zip(texts) {
            let text = text.unwrap();
            let well_formed = text.starts_with("{\"id\":\"") && text.ends_with('}');
            prop_assert!(well_formed, "line text: {}", text);
            prop_assert_eq!(&text[7..33], line.id());
        }
        for (seq, id) in ids.iter().enumerate() {
            prop_assert_eq!(index.position(id), Some(seq));
            prop_assert_eq!(index.position_after(id), Some(seq + 1));
        }
    }

    #[test]
    fn hostile_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let mut index = LineIndex::new(&path);
        index.extend().unwrap();
        let _ = read_lines(&path, &index.lines()).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// An index kept on disk — extended in any split, taken up by a new index, damaged
    /// anywhere — answers exactly what an index built in memory in one read answers.
    #[test]
    fn a_stored_index_answers_like_one_built_in_memory(
        pieces in proptest::collection::vec(piece(), 0..40),
        cuts in proptest::collection::vec(any::<u16>(), 0..6),
        flush in 1usize..6,
        flip in any::<prop::sample::Index>(),
        byte: u8,
    ) {
        let (bytes, ids) = render(&pieces);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, b"").unwrap();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % (bytes.len() + 1)).collect();
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let mut at = 0;
        for cut in cuts {
            file.write_all(&bytes[at..cut]).unwrap();
            at = cut;
            // A new index each time: each takes up the file the last one left.
            let mut index = LineIndex::new(&path).persisting(0, 0, flush);
            index.extend().unwrap();
        }
        // The reference: the same bytes indexed in memory, in a folder with no stored index.
        let elsewhere = tempfile::tempdir().unwrap();
        let copy = elsewhere.path().join("t.jsonl");
        std::fs::write(&copy, &bytes).unwrap();
        let mut whole = LineIndex::new(&copy);
        whole.extend().unwrap();
        let taken_up = || {
            let mut index = LineIndex::new(&path).persisting(0, 0, flush);
            index.extend().unwrap();
            index
        };
        let index = taken_up();
        prop_assert_eq!(snapshot(&index), snapshot(&whole));
        prop_assert_eq!(index.skipped, whole.skipped);
        for (seq, id) in ids.iter().enumerate() {
            prop_assert_eq!(index.position(id), Some(seq));
            prop_assert_eq!(index.position_after(id), Some(seq + 1));
        }
        let down: Vec<usize> = index.scan(index.len(), false).map(|(seq, _)| seq).collect();
        prop_assert_eq!(down, (0..index.len()).rev().collect::<Vec<_>>());
        drop(index);
        let stored = index_file::path_for(&path);
        if let Ok(mut kept) = std::fs::read(&stored) {
            let at = flip.index(kept.len());
            kept[at] = byte;
            std::fs::write(&stored, &kept).unwrap();
            let index = taken_up();
            prop_assert_eq!(snapshot(&index), snapshot(&whole));
            prop_assert_eq!(index.skipped, whole.skipped);
        }
    }
}

#[test]
fn batches_are_bounded_by_bytes_and_count() {
    let line = |len: u32| IndexedLine {
        offset: 0,
        len,
        kind: 0,
        from: 0,
        id: [b'0'; 26],
    };
    let big = u32::try_from(BATCH_BYTES / 2).unwrap();
    let lines = [line(big), line(big), line(big), line(10), line(10)];
    assert_eq!(batch_end(&lines, 0, 100), 2);
    assert_eq!(batch_end(&lines, 2, 100), 5);
    assert_eq!(batch_end(&lines, 3, 1), 4);
    assert_eq!(batch_end(&lines, 5, 100), 5);
    // A single line larger than the budget still makes progress.
    assert_eq!(batch_end(&[line(u32::MAX)], 0, 100), 1);
}

#[test]
fn a_replaced_file_restarts_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let (bytes, ids) = render(&[
        Piece::Event {
            kind: 0,
            from: 0,
            crlf: false,
        },
        Piece::Event {
            kind: 1,
            from: 1,
            crlf: false,
        },
    ]);
    std::fs::write(&path, &bytes).unwrap();
    let mut index = LineIndex::new(&path);
    assert_eq!(index.extend().unwrap().added, 0..2);
    let (shorter, new_ids) = render(&[Piece::Event {
        kind: 2,
        from: 0,
        crlf: false,
    }]);
    std::fs::write(&path, &shorter).unwrap();
    let extension = index.extend().unwrap();
    assert!(extension.truncated);
    assert_eq!(extension.added, 0..1);
    assert_eq!(index.get(0).unwrap().id(), new_ids[0]);
    assert_ne!(new_ids[0], ids[0]);
    std::fs::remove_file(&path).unwrap();
    assert!(index.extend().unwrap().truncated);
    assert!(index.is_empty());
}

#[test]
fn an_oversized_line_is_skipped_without_buffering_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut bytes = vec![b'x'; crate::transcript::framer::MAX_LINE_BYTES + 10];
    bytes.push(b'\n');
    let (tail, ids) = render(&[Piece::Event {
        kind: 0,
        from: 0,
        crlf: false,
    }]);
    bytes.extend_from_slice(&tail);
    std::fs::write(&path, &bytes).unwrap();
    let mut index = LineIndex::new(&path);
    index.extend().unwrap();
    assert_eq!(index.skipped, 1);
    assert_eq!(index.len(), 1);
    assert_eq!(index.get(0).unwrap().id(), ids[0]);
}
