//! The chunked parallel reader `crumb replay` and `crumb status` fold whole transcripts with.
//!
//! Reading a line is most of the work and each line reads on its own, so a reader thread cuts the
//! file into 256 KiB batches of whole lines, worker threads read them ([`prepare_line`], the
//! same rules as [`crate::transcript::reader::Tolerant`]) and the calling thread folds them in
//! file order into a [`Replay`], which applies the duplicate-id rule; a last thread frees folded
//! batches, so the fold (the one part that cannot be shared out) does only the fold. Lines over
//! [`MAX_LINE_BYTES`] are skipped without being buffered.

use std::io::Read;
use std::sync::mpsc;

use crate::engine::Replay;
use crate::engine::replay::{Parsed, Prepared, prepare_line};
use crate::engine::state::State;
use crate::pipeline::table::TransitionTable;
use crate::transcript::reader::{MAX_LINE_BYTES, too_long};

/// Bytes read (and parsed as one batch) at a time.
const CHUNK_BYTES: usize = 256 * 1024;

/// Fold `input` into `replay`, calling `after` with the state after each folded event.
///
/// Reading a line is most of the work and each line reads on its own, so a reader thread cuts the
/// input into batches of whole lines, worker threads (one per core, at most four) read them with
/// [`prepare_line`], and this thread folds them strictly in file order: batch `i` goes to worker
/// `i % n` and comes back in the same rotation. The fast path keeps each line's strings as places in
/// the batch and folds them into one reused event, so hardly anything is allocated per line.
pub fn fold(
    input: impl Read + Send,
    table: &TransitionTable,
    replay: &mut Replay,
    after: impl FnMut(&State),
) -> std::io::Result<()> {
    fold_from(input, 1, table, replay, after)
}

/// [`fold`] `input` whose first line is line `first_line` of the transcript (a fold resumed from
/// a snapshot reads only the lines after it).
pub fn fold_from(
    input: impl Read + Send,
    first_line: u64,
    table: &TransitionTable,
    replay: &mut Replay,
    mut after: impl FnMut(&State),
) -> std::io::Result<()> {
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, 4);
    let mut chunker = Chunker::new(input);
    chunker.next_line = first_line;
    if workers == 1 {
        while let Some(batch) = chunker.next_batch()? {
            batch.prepare(table).fold(table, replay, &mut after);
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let mut inputs = Vec::with_capacity(workers);
        let mut outputs = Vec::with_capacity(workers);
        for _ in 0..workers {
            // Short queues: every batch in one holds its text and its prepared lines (peak RSS).
            let (to_worker, batches) = mpsc::sync_channel::<Batch>(1);
            let (results, from_worker) = mpsc::sync_channel::<PreparedBatch>(1);
            scope.spawn(move || {
                for batch in batches {
                    if results.send(batch.prepare(table)).is_err() {
                        return;
                    }
                }
            });
            inputs.push(to_worker);
            outputs.push(from_worker);
        }
        let reader = scope.spawn(move || -> std::io::Result<()> {
            let mut index = 0usize;
            while let Some(batch) = chunker.next_batch()? {
                if inputs[index % inputs.len()].send(batch).is_err() {
                    break;
                }
                index += 1;
            }
            Ok(())
        });
        // Folded batches are freed on a thread of their own: the folding thread is the one that
        // cannot be shared out, so it does nothing else.
        let (garbage, folded) = mpsc::sync_channel::<PreparedBatch>(1);
        scope.spawn(move || folded.into_iter().for_each(drop));
        let mut index = 0usize;
        while let Ok(mut batch) = outputs[index % outputs.len()].recv() {
            batch.fold(table, replay, &mut after);
            if garbage.send(batch).is_err() {
                break;
            }
            index += 1;
        }
        drop(garbage);
        reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the transcript reader panicked")))
    })
}

/// Whole lines of the transcript, a batch at a time.
struct Batch {
    /// Line number of the first line.
    first_line: u64,
    bytes: Vec<u8>,
    /// Start and end (exclusive, newline not included) of each line in `bytes`.
    ranges: Vec<(usize, usize)>,
    /// Lines longer than [`MAX_LINE_BYTES`]: index in `ranges` and length; their bytes were dropped.
    too_long: Vec<(usize, u64)>,
}

impl Batch {
    /// Read every line (on any thread). When the whole batch is UTF-8 it becomes text and each
    /// line is prepared ([`prepare_line`]); otherwise its lines are left for [`Replay::feed_line`].
    fn prepare(self, table: &TransitionTable) -> PreparedBatch {
        let content = match String::from_utf8(self.bytes) {
            Ok(text) => {
                let lines = self
                    .ranges
                    .iter()
                    .map(|&(start, end)| prepare_line(&text[start..end], table))
                    .collect();
                Content::Text(text, lines)
            }
            Err(not_text) => Content::Bytes(not_text.into_bytes()),
        };
        PreparedBatch {
            first_line: self.first_line,
            ranges: self.ranges,
            too_long: self.too_long,
            content,
        }
    }
}

/// A batch after [`Batch::prepare`].
struct PreparedBatch {
    first_line: u64,
    ranges: Vec<(usize, usize)>,
    too_long: Vec<(usize, u64)>,
    content: Content,
}

enum Content {
    /// The batch as text, with one prepared line per range.
    Text(String, Vec<Prepared>),
    /// Some line is not UTF-8: the bytes, read line by line when folded.
    Bytes(Vec<u8>),
}

impl PreparedBatch {
    /// Fold the lines in order, leaving what is to be freed in the batch (see
    /// [`Replay::fold_prepared`]).
    fn fold(
        &mut self,
        table: &TransitionTable,
        replay: &mut Replay,
        after: &mut impl FnMut(&State),
    ) {
        let mut over_limit = self.too_long.iter().peekable();
        let (text, bytes, prepared): (&str, &[u8], &mut [Prepared]) = match &mut self.content {
            Content::Text(text, lines) => (text.as_str(), &[], lines.as_mut_slice()),
            Content::Bytes(bytes) => ("", bytes.as_slice(), &mut []),
        };
        let mut prepared = prepared.iter_mut();
        for (index, &(start, end)) in self.ranges.iter().enumerate() {
            let line_no = self.first_line + index as u64;
            let line_prepared = prepared.next();
            let folded = if let Some((_, len)) = over_limit.next_if(|(i, _)| *i == index) {
                replay.feed_parsed(table, line_no, Parsed::Skip(too_long(*len)))
            } else if let Some(line_prepared) = line_prepared {
                replay.fold_prepared(table, line_no, &text[start..end], line_prepared)
            } else {
                replay.feed_line(table, line_no, &bytes[start..end])
            };
            if folded {
                after(&replay.state);
            }
        }
    }
}

/// Cuts a byte stream into batches of whole lines without ever buffering more than
/// [`MAX_LINE_BYTES`] of one line.
///
/// Each read lands directly in the batch's own buffer (after the unfinished line carried over
/// from the previous read), so the file's bytes are copied once, by the kernel; only the short
/// unfinished tail is copied again. Newlines are found with `memchr` (vectorised).
struct Chunker<R> {
    input: R,
    /// Bytes asked for per read ([`CHUNK_BYTES`]; smaller in tests, to cut lines everywhere).
    chunk: usize,
    /// The unfinished last line of the previous read.
    carry: Vec<u8>,
    /// Bytes of an over-long line dropped so far.
    dropping: Option<u64>,
    /// Longest line kept.
    max_line: u64,
    next_line: u64,
    eof: bool,
}

impl<R: Read> Chunker<R> {
    fn new(input: R) -> Self {
        Chunker {
            input,
            chunk: CHUNK_BYTES,
            carry: Vec::new(),
            dropping: None,
            max_line: MAX_LINE_BYTES as u64,
            next_line: 1,
            eof: false,
        }
    }

    fn next_batch(&mut self) -> std::io::Result<Option<Batch>> {
        loop {
            if self.eof {
                return Ok(None);
            }
            // The carried line first, then up to `chunk` new bytes after it.
            let mut bytes = std::mem::take(&mut self.carry);
            let kept = bytes.len();
            bytes.reserve(self.chunk);
            let read = (&mut self.input)
                .take(self.chunk as u64)
                .read_to_end(&mut bytes)?;
            let mut batch = Batch {
                first_line: self.next_line,
                bytes: Vec::new(),
                ranges: Vec::new(),
                too_long: Vec::new(),
            };
            if read == 0 {
                self.eof = true;
                if let Some(len) = self.dropping.take() {
                    batch.too_long.push((0, len));
                    batch.ranges.push((0, 0));
                } else if kept > 0 {
                    batch.ranges.push((0, kept));
                    batch.bytes = bytes;
                }
            } else {
                self.split(bytes, kept, &mut batch);
            }
            self.next_line += batch.ranges.len() as u64;
            if !batch.ranges.is_empty() {
                return Ok(Some(batch));
            }
        }
    }

    /// Turn `bytes` (`kept` carried bytes, then a fresh read) into `batch`: every line completed
    /// by the read, with the unfinished tail kept for the next read.
    fn split(&mut self, mut bytes: Vec<u8>, kept: usize, batch: &mut Batch) {
        let Some(last) = memchr::memrchr(b'\n', &bytes[kept..]).map(|at| kept + at) else {
            match &mut self.dropping {
                Some(len) => *len += (bytes.len() - kept) as u64,
                None => self.carry_over(bytes),
            }
            return;
        };
        let mut line_start = 0;
        if let Some(len) = self.dropping.take() {
            // The over-long line ends at the first newline of this read (nothing was carried).
            let first = memchr::memchr(b'\n', &bytes).unwrap_or(last);
            batch
                .too_long
                .push((batch.ranges.len(), len + first as u64 + 1));
            batch.ranges.push((0, 0));
            line_start = first + 1;
        }
        let from = line_start;
        for newline in memchr::memchr_iter(b'\n', bytes.get(from..=last).unwrap_or_default()) {
            let end = from + newline;
            batch.ranges.push((line_start, end));
            line_start = end + 1;
        }
        self.carry_over(bytes[last + 1..].to_vec());
        bytes.truncate(last + 1);
        batch.bytes = bytes;
    }

    /// Keep an unfinished line for the next read, or count it as dropped once it is too long.
    fn carry_over(&mut self, rest: Vec<u8>) {
        if rest.len() as u64 > self.max_line {
            self.dropping = Some(rest.len() as u64);
        } else {
            self.carry = rest;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Chunker;

    /// Hands out at most `step` bytes per read, to put line ends at every chunk position.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// (line number, Some(bytes) or None when dropped as too long) for every line.
    fn lines(data: &[u8], step: usize, chunk: usize, max_line: u64) -> Vec<(u64, Option<Vec<u8>>)> {
        let mut chunker = Chunker::new(Trickle { data, step });
        chunker.max_line = max_line;
        chunker.chunk = chunk;
        let mut out = Vec::new();
        while let Some(batch) = chunker.next_batch().expect("in-memory reads do not fail") {
            for (index, &(start, end)) in batch.ranges.iter().enumerate() {
                let dropped = batch.too_long.iter().any(|(i, _)| *i == index);
                let bytes = (!dropped).then(|| batch.bytes[start..end].to_vec());
                out.push((batch.first_line + index as u64, bytes));
            }
        }
        out
    }

    proptest! {
        #[test]
        fn chunking_yields_exactly_the_lines_of_the_input(
            raw in prop::collection::vec(prop::collection::vec(prop_oneof![Just(b'a'), Just(b'\r'), any::<u8>()], 0..40), 0..20),
            step in 1usize..64,
            chunk in 1usize..64,
            final_newline: bool,
        ) {
            let raw: Vec<Vec<u8>> = raw.into_iter().map(|l| l.into_iter().filter(|&b| b != b'\n').collect()).collect();
            let mut data = raw.join(&b'\n');
            if final_newline && !raw.is_empty() {
                data.push(b'\n');
            }
            let expected: Vec<(u64, Option<Vec<u8>>)> = if data.is_empty() {
                Vec::new()
            } else {
                let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
                if data.last() == Some(&b'\n') {
                    parts.pop();
                }
                parts.into_iter().enumerate().map(|(i, l)| (i as u64 + 1, Some(l.to_vec()))).collect()
            };
            prop_assert_eq!(lines(&data, step, chunk, u64::MAX), expected);
        }
    }

    #[test]
    fn over_long_lines_are_dropped_without_losing_their_neighbours() {
        let data = b"short\nthis line is far too long\nok\nanother very long line at the end";
        // Reads no bigger than the limit, as `CHUNK_BYTES` is below `MAX_LINE_BYTES`.
        for (step, chunk) in (1..12).flat_map(|step| [(step, 1), (step, step), (step, 10)]) {
            let got = lines(data, step, chunk, 10);
            assert_eq!(
                got,
                vec![
                    (1, Some(b"short".to_vec())),
                    (2, None),
                    (3, Some(b"ok".to_vec())),
                    (4, None)
                ],
                "step {step}, chunk {chunk}"
            );
        }
    }
}
