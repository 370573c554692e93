//! The duplicate-id rule: **an event whose id was read among the last [`RECENT_IDS`] events is a
//! duplicate**, skipped and reported. It is a rule of reading transcripts, applied by every reader
//! (the fold in `engine::Replay` and the readers that do not fold, `reader::each_event`), so it
//! lives with the transcript, below the engine.
//!
//! Our writer's ids increase (except right after a line it ignored as far ahead of the clock), so
//! the common line costs one comparison with the highest id so far; only an id at or below it is
//! looked up. The window is bounded (not every id ever seen) because legacy transcripts are not
//! monotonic (ULIDs minted in the same millisecond by different processes) and a set of a million
//! ids would cost more memory than the whole replay.

use serde::{Deserialize, Serialize};

use super::clip::clip;

/// How many of the latest admitted ids the duplicate check remembers.
pub const RECENT_IDS: usize = 256;

/// The ids of the latest admitted events. Serialised as it is (ring, next slot, highest id) so a
/// fold resumed from a snapshot evicts the same ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentIds {
    /// The last [`RECENT_IDS`] ids, overwritten in place (their buffers are reused).
    ring: Vec<String>,
    next: usize,
    /// The highest id admitted so far.
    max: String,
}

impl RecentIds {
    /// Remember `id` and return true, or return false when it is a duplicate.
    pub fn admit(&mut self, id: &str) -> bool {
        if id > self.max.as_str() {
            self.max.clear();
            self.max.push_str(id);
        } else if self.ring.iter().any(|seen| seen == id) {
            return false;
        }
        if self.ring.len() < RECENT_IDS {
            self.ring.push(id.to_owned());
        } else {
            let slot = &mut self.ring[self.next];
            slot.clear();
            slot.push_str(id);
        }
        self.next = (self.next + 1) % RECENT_IDS;
        true
    }

    /// Whether this could have been built by [`RecentIds::admit`] (a deserialised one is checked).
    pub fn is_consistent(&self) -> bool {
        let full = self.ring.len() == RECENT_IDS;
        self.ring.len() <= RECENT_IDS
            && self.next < RECENT_IDS
            && (full || self.next == self.ring.len())
            && self.ring.iter().all(|id| id.as_str() <= self.max.as_str())
    }
}

/// The reason a duplicate is skipped, worded the same by every reader.
pub fn duplicate(id: &str) -> String {
    format!(
        "duplicate id {} (an event with this id was already folded)",
        clip(id, 40)
    )
}

#[cfg(test)]
mod tests {
    use super::{RECENT_IDS, RecentIds};

    #[test]
    fn a_recent_id_is_a_duplicate_and_out_of_order_new_ids_are_not() {
        let mut ids = RecentIds::default();
        assert!(ids.admit("01B"));
        assert!(ids.admit("01A"), "below the highest id but never seen");
        assert!(!ids.admit("01B"));
        assert!(!ids.admit("01A"));
        assert!(ids.admit("01C"));
    }

    #[test]
    fn the_window_is_bounded() {
        let mut ids = RecentIds::default();
        for n in 0..=RECENT_IDS {
            assert!(ids.admit(&format!("{n:08}")));
        }
        assert!(
            ids.admit(&format!("{:08}", 0)),
            "the oldest id has left the window"
        );
        assert!(!ids.admit(&format!("{RECENT_IDS:08}")));
    }
}
