//! The visited-set key of a point: a hash of the folded state and the pending work, leaving out
//! what only describes the past to people and is never read by routing (event ids, time, counts
//! of events, turns and spawns, the previous verdict, prompt context). Two points with the same
//! key have the same futures, so the explorer visits each once and a loop shows up as a key seen
//! again on the same path.

use std::hash::{DefaultHasher, Hash, Hasher};

use super::state_hash::{Rules, hash_into};
use super::symmetry::Symmetry;
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
    // hashed on its own: once joined, its branches are history (see `key`)
    "fan_out",
];

/// Fields whose elements are one set whatever order they came in: the branches of a fan-out in
/// the order they reported (the join combines them the same in any order; only the feedback text,
/// which is history, follows it), so two orders are one state.
/// The roles' records (a map keyed by name) and a fan-out's roles are sets too, so a renaming of
/// twins (see [`Symmetry`]) gives the same key whatever order the new names sort in.
const UNORDERED: &[&str] = &["results", "branches", "roles"];

/// The rules the key hashes under, with `rename` for the twins.
pub(super) fn rules(rename: &[(String, String)]) -> Rules<'_> {
    Rules {
        skip: HISTORY_ONLY,
        unordered: UNORDERED,
        rename,
    }
}

/// The 64-bit key of `point`, the same for every renaming of twins in `symmetry`, and the
/// renaming that took `point` to the canonical names (`from`, `to`; the others keep theirs).
pub(super) fn key(point: &Point, symmetry: &Symmetry) -> (u64, Vec<(String, String)>) {
    let rename = if symmetry.is_trivial() {
        Vec::new()
    } else {
        symmetry.renaming(point, rules(&[]))
    };
    (hash(point, &rename), rename)
}

fn hash(point: &Point, rename: &[(String, String)]) -> u64 {
    let rules = rules(rename);
    let mut hasher = DefaultHasher::new();
    hash_into(&point.state, rules, &mut hasher);
    // Pending work as a multiset of renamed items.
    multiset(&point.pending, rules, &mut hasher);
    // The fan-out: which route spawned whom, and until it joined what each branch reported.
    // After the join nothing reads the branches again (later ones are only recorded).
    if let Some(fan_out) = &point.state.fan_out {
        fan_out.route.hash(&mut hasher);
        multiset(&fan_out.roles, rules, &mut hasher);
        match &fan_out.joined {
            None => multiset(&fan_out.results, rules, &mut hasher),
            Some(_) => 1u8.hash(&mut hasher),
        }
    }
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

/// `items` hashed as a multiset: each on its own, the hashes sorted.
fn multiset<T: serde::Serialize>(items: &[T], rules: Rules<'_>, hasher: &mut DefaultHasher) {
    let mut each: Vec<u64> = items
        .iter()
        .map(|item| {
            let mut own = DefaultHasher::new();
            hash_into(item, rules, &mut own);
            own.finish()
        })
        .collect();
    each.sort_unstable();
    each.hash(hasher);
}
