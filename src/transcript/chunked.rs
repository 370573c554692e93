//! The chunked parallel reader `crumb replay` and `crumb status` fold whole transcripts with.
//!
//! Reading a line is most of the work and each line reads on its own, so a reader thread cuts the
//! file into 256 KiB batches of whole lines with the one line framer
//! ([`crate::transcript::framer`], which also skips lines over its limit without buffering them),
//! worker threads read them ([`prepare_line`], the same rules as
//! [`crate::transcript::reader::Tolerant`]) and the calling thread folds them in file order into a
//! [`Replay`], which applies the duplicate-id rule; a last thread frees folded batches, so the fold
//! (the one part that cannot be shared out) does only the fold.

use std::io::Read;
use std::sync::mpsc;

use crate::engine::Replay;
use crate::engine::replay::{Parsed, Prepared, prepare_line};
use crate::engine::state::State;
use crate::pipeline::table::TransitionTable;
use crate::transcript::framer::{FramedInput, Frames, too_long};

/// Fold `input` into `replay`, calling `after` with the state after each folded event.
///
/// Reading a line is most of the work and each line reads on its own, so a reader thread cuts the
/// input into batches of whole lines, worker threads (one per core, at most four) read them with
/// [`prepare_line`], and this thread folds them strictly in file order: batch `i` goes to worker
/// `i % n` and comes back in the same rotation. The fast path keeps each line's strings as places in
/// the batch and folds them into one reused event, so hardly anything is allocated per line.
pub(crate) fn fold(
    input: impl Read + Send,
    table: &TransitionTable,
    replay: &mut Replay,
    after: impl FnMut(&State),
) -> std::io::Result<()> {
    fold_from(input, 1, table, replay, after)
}

/// [`fold`] `input` whose first line is line `first_line` of the transcript (a fold resumed from
/// a snapshot reads only the lines after it).
pub(crate) fn fold_from(
    input: impl Read + Send,
    first_line: u64,
    table: &TransitionTable,
    replay: &mut Replay,
    mut after: impl FnMut(&State),
) -> std::io::Result<()> {
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, 4);
    let mut framed = FramedInput::resume(input, 0, first_line.saturating_sub(1));
    if workers == 1 {
        while let Some(batch) = framed.next_frames()? {
            prepare(batch, table).fold(table, replay, &mut after);
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let mut inputs = Vec::with_capacity(workers);
        let mut outputs = Vec::with_capacity(workers);
        for _ in 0..workers {
            // Short queues: every batch in one holds its text and its prepared lines (peak RSS).
            let (to_worker, batches) = mpsc::sync_channel::<Frames>(1);
            let (results, from_worker) = mpsc::sync_channel::<PreparedBatch>(1);
            scope.spawn(move || {
                for batch in batches {
                    if results.send(prepare(batch, table)).is_err() {
                        return;
                    }
                }
            });
            inputs.push(to_worker);
            outputs.push(from_worker);
        }
        let reader = scope.spawn(move || -> std::io::Result<()> {
            let mut index = 0usize;
            while let Some(batch) = framed.next_frames()? {
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

/// Read every line of a batch (on any thread). When the whole batch is UTF-8 it becomes text and
/// each line is prepared ([`prepare_line`]); otherwise its lines are left for
/// [`Replay::fold_line`].
fn prepare(batch: Frames, table: &TransitionTable) -> PreparedBatch {
    let content = match String::from_utf8(batch.bytes) {
        Ok(text) => {
            let lines = batch
                .ranges
                .iter()
                .map(|&(start, end)| prepare_line(&text[start..end], table))
                .collect();
            Content::Text(text, lines)
        }
        Err(not_text) => Content::Bytes(not_text.into_bytes()),
    };
    PreparedBatch {
        first_line: batch.first_line,
        ranges: batch.ranges,
        too_long: batch.too_long,
        content,
    }
}

/// A batch after [`prepare`].
struct PreparedBatch {
    first_line: u64,
    ranges: Vec<(usize, usize)>,
    /// Lines over the framer's limit: index in `ranges`, byte offset, length.
    too_long: Vec<(usize, u64, u64)>,
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
            let folded = if let Some((.., len)) = over_limit.next_if(|(i, ..)| *i == index) {
                replay
                    .fold_parsed(table, line_no, Parsed::Skip(too_long(*len)))
                    .is_ok_and(|folded| folded.is_some())
            } else if let Some(line_prepared) = line_prepared {
                replay.fold_prepared(table, line_no, &text[start..end], line_prepared)
            } else {
                replay.fold_line(table, line_no, &bytes[start..end])
            };
            if folded {
                after(&replay.state);
            }
        }
    }
}
