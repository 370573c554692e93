//! A session's story ([`crate::engine::story`]), folded from its transcript by the same replay the
//! engine uses, with the story observing each event's state change and effects: for `crumb
//! status` and the exports (Studio keeps its own fold going as lines arrive).

use std::path::Path;

use crate::engine::Replay;
use crate::engine::replay::Parsed;
use crate::engine::story::{Before, Story, StoryFold};
use crate::pipeline::table::TransitionTable;
use crate::transcript::reader::Tolerant;
use crate::transcript::tail::Tail;

/// Transcripts longer than this many events are not told by `crumb status` (a second fold of a
/// very long session would double its cost); the status says so, Studio and exports tell them.
pub(crate) const STATUS_STORY_EVENTS: u64 = 200_000;

/// The story of the transcript at `path`, read through `table`.
pub(crate) fn story_of(path: &Path, table: &TransitionTable) -> std::io::Result<Story> {
    let mut tail: Tail<Tolerant> = Tail::resume(path, 0, 0);
    let mut replay = Replay::new();
    let mut fold = StoryFold::new();
    loop {
        let batch = tail.poll()?;
        for (line, item) in batch.lines.into_iter().zip(batch.items) {
            let parsed = item.unwrap_or_else(|issue| Parsed::Skip(issue.message));
            observe(&mut fold, &mut replay, table, line, parsed);
        }
        if !batch.more {
            return Ok(fold.into_story());
        }
    }
}

/// Fold one line into `replay` and let `fold` observe what it did.
pub(crate) fn observe(
    fold: &mut StoryFold,
    replay: &mut Replay,
    table: &TransitionTable,
    line: u64,
    parsed: Parsed,
) -> Option<crate::transcript::Event> {
    let before = Before::of(&replay.state);
    let (event, effects) = replay.fold_parsed(table, line, parsed).ok()??;
    fold.observe(table, &event, before, &replay.state, &effects);
    Some(event)
}
