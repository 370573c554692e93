//! The visited-set key of a point: a hash of the folded state and the pending work, leaving out
//! what only describes the past to people and is never read by routing (event ids, time, counts
//! of events, turns and spawns, the previous verdict, prompt context). Two points with the same
//! key have the same futures, so the explorer visits each once and a loop shows up as a key seen
//! again on the same path.

use std::hash::{DefaultHasher, Hash, Hasher};

use super::state_hash::{Rules, hash_into};
use super::world::Point;
use crate::engine::guards::Rework;

/// Struct fields dropped wherever they appear in the state. New state fields are hashed unless
/// listed here, so a counter added to the engine bounds (or splits) states without a change here.
const HISTORY_ONLY: &[&str] = &[
    // ids and time
    "id",
    "event_id",
    "effect_id",
    "judge_event_id",
    "source_event_id",
    "build_event_id",
    "session_id",
    "ts",
    "clock",
    "last_event",
    // statistics for people (`crumb status`, `/ask`), never branched on
    "events",
    "spawns",
    "turns",
    "errors_total",
    "failures_total",
    "unrouted_events",
    "refused_events",
    "verify_aliases",
    "next_role",
    "latest",
    "previous",
    "routed_join",
    // what the next prompt is given, not where the route goes
    "last_spawn",
    "body",
    "feedback",
    "raw",
    "corrections",
    // read only through the rework guard's cap, hashed in their place (see `key`)
    "builds",
    "vetoes",
];

/// Fields whose elements are one set whatever order they came in: the branches of a fan-out in
/// the order they reported (the join combines them the same in any order; only the feedback text,
/// which is history, follows it), so two orders are one state.
const UNORDERED: &[&str] = &["results", "branches"];

/// The 64-bit key of `point`.
pub(super) fn key(point: &Point) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_into(
        &point.state,
        Rules {
            skip: HISTORY_ONLY,
            unordered: UNORDERED,
        },
        &mut hasher,
    );
    point.pending.hash(&mut hasher);
    // Rebuilds and vetoes only ever lower the convergence cap, and only through thresholds: a
    // person's endless /veto after QA could not run is one loop, not an endless line of states.
    let budgets = &point.state.budgets;
    let rework = Rework {
        respecs: budgets.respecs,
        builds: budgets.builds,
        vetoes: budgets.vetoes,
    };
    rework.convergence_share().to_bits().hash(&mut hasher);
    hasher.finish()
}
