//! Following a transcript as it grows: partial lines, bad lines, truncation and resuming.

use super::*;

#[test]
fn tail_keeps_a_partial_line_until_it_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let mut tail = Tail::new(&path);
    assert!(tail.poll().unwrap().is_empty(), "a missing file is empty");
    let second = line(2);
    let (head, rest) = second.split_at(40);
    append(&path, &format!("{}\n{head}", line(1)));
    let batch = tail.poll().unwrap();
    assert_eq!(batch.items.len(), 1);
    assert_eq!(
        batch.items[0].as_ref().unwrap().id,
        "01JZ0000000000000000000001"
    );
    assert!(
        tail.poll().unwrap().is_empty(),
        "the partial line is held back"
    );
    append(&path, &format!("{rest}\n"));
    let batch = tail.poll().unwrap();
    let ids: Vec<String> = batch
        .items
        .into_iter()
        .map(|item| item.unwrap().id)
        .collect();
    assert_eq!(ids, ["01JZ0000000000000000000002"]);
    assert_eq!(tail.offset(), fs::metadata(&path).unwrap().len());
}

#[test]
fn tail_reports_bad_lines_with_numbers_and_detects_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    append(&path, &format!("{}\ngarbage\n{}\n", line(1), line(2)));
    let mut tail = Tail::new(&path);
    let batch = tail.poll().unwrap();
    assert_eq!(batch.items.len(), 3);
    assert_eq!(batch.items[1].as_ref().unwrap_err().line, 2);
    assert!(!batch.truncated);
    fs::write(&path, format!("{}\n", line(3))).unwrap();
    let batch = tail.poll().unwrap();
    assert!(batch.truncated, "a shorter file is reported as truncated");
    let ids: Vec<String> = batch
        .items
        .into_iter()
        .map(|item| item.unwrap().id)
        .collect();
    assert_eq!(
        ids,
        ["01JZ0000000000000000000003"],
        "after truncation the tail restarts at byte 0"
    );
}

#[test]
fn tail_resumes_where_a_reader_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    append(&path, &format!("{}\n{}\n", line(1), line(2)));
    let mut reader = Reader::new(BufReader::new(fs::File::open(&path).unwrap()));
    assert_eq!(reader.by_ref().count(), 2);
    let mut tail: Tail = Tail::resume(&path, reader.offset(), reader.lines_read());
    append(&path, "oops\n");
    let batch = tail.poll().unwrap();
    assert_eq!(batch.items[0].as_ref().unwrap_err().line, 3);
}

/// The writer cuts a failed append back to the last whole line: the tail forgets the half line it
/// saw, neither restarting from byte 0 nor gluing it to the line appended in its place.
#[test]
fn tail_forgets_a_partial_line_the_writer_cut_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let cut_back = |len: u64| {
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len)
            .unwrap();
    };
    append(&path, &format!("{}\n", line(1)));
    let mut tail = Tail::new(&path);
    assert_eq!(tail.poll().unwrap().items.len(), 1);
    for (n, replaced) in [(2, true), (3, false)] {
        let whole = fs::metadata(&path).unwrap().len();
        append(&path, &line(9)[..60]);
        assert!(tail.poll().unwrap().items.is_empty(), "held back");
        cut_back(whole);
        if !replaced {
            let batch = tail.poll().unwrap();
            assert!(batch.is_empty() && !batch.truncated, "{batch:?}");
        }
        append(&path, &format!("{}\n", line(n)));
        let batch = tail.poll().unwrap();
        assert!(!batch.truncated, "only the half line went away");
        let ids: Vec<String> = batch
            .items
            .into_iter()
            .map(|item| item.unwrap().id)
            .collect();
        assert_eq!(ids, [format!("01JZ00000000000000000000{n:02}")]);
        assert_eq!(tail.offset(), fs::metadata(&path).unwrap().len());
    }
}
