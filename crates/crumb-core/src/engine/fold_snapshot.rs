//! A fold's resumable state: what a [`Replay`] holds after some lines, as a value that serialises
//! and comes back, so a long transcript is folded once and then only its new lines.
//!
//! It is the whole of what the next line's fold depends on — the state, the read statistics and
//! the duplicate rule's window of recent ids — so folding a prefix, saving this, loading it and
//! folding the rest gives what folding everything at once gives (a property test holds it to the
//! byte). Where the prefix ends and whether the file still holds it is the caller's business: this
//! module does no I/O.

use serde::{Deserialize, Serialize};

use super::replay::{Replay, ReplayStats};
use super::state::State;
use crate::transcript::recent_ids::RecentIds;

/// A [`Replay`] frozen between two lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldSnapshot {
    pub state: State,
    pub stats: ReplayStats,
    /// The duplicate rule's memory: an id folded just before the cut is still a duplicate after it.
    pub ids: RecentIds,
}

impl FoldSnapshot {
    /// Freeze `replay` as it stands.
    pub fn of(replay: &Replay) -> FoldSnapshot {
        FoldSnapshot {
            state: replay.state.clone(),
            stats: replay.stats.clone(),
            ids: replay.recent_ids().clone(),
        }
    }

    /// The fold to go on with, or `None` when the id window is not one a fold could have built
    /// (a hand-edited or corrupted snapshot).
    pub fn into_replay(self) -> Option<Replay> {
        self.ids
            .is_consistent()
            .then(|| Replay::from_parts(self.state, self.stats, self.ids))
    }
}

#[cfg(test)]
mod tests {
    use super::FoldSnapshot;
    use crate::engine::Replay;
    use crate::transcript::recent_ids::RecentIds;

    #[test]
    fn an_inconsistent_id_window_is_refused() {
        let mut ids = RecentIds::default();
        assert!(ids.admit("01B"));
        let mut value = serde_json::to_value(FoldSnapshot {
            ids,
            ..FoldSnapshot::of(&Replay::new())
        })
        .expect("serialises");
        value["ids"]["next"] = serde_json::json!(7);
        let bent: FoldSnapshot = serde_json::from_value(value).expect("deserialises");
        assert!(bent.into_replay().is_none());
    }

    #[test]
    fn a_fresh_fold_round_trips() {
        let text = serde_json::to_string(&FoldSnapshot::of(&Replay::new())).expect("serialises");
        let back: FoldSnapshot = serde_json::from_str(&text).expect("deserialises");
        assert_eq!(back, FoldSnapshot::of(&Replay::new()));
        assert!(back.into_replay().is_some());
    }
}
