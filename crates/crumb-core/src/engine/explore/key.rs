//! The visited-set key of a point: a hash of the folded state and the pending work, leaving out
//! what only describes the past to people and is never read by routing (event ids, time, counts
//! of events, turns and spawns, the previous verdict, prompt context). Two points with the same
//! key have the same futures, so the explorer visits each once and a loop shows up as a key seen
//! again on the same path.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use super::world::Point;
use crate::engine::guards::Rework;

/// Keys dropped wherever they appear in the serialised state. New state fields are hashed unless
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

/// The 64-bit key of `point`.
pub fn key(point: &Point) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut value = serde_json::to_value(&point.state).unwrap_or(Value::Null);
    // The branches of a fan-out in the order they reported: the join combines them the same in
    // any order (only the feedback text, which is history, follows it), so two orders are one
    // state.
    if let Some(fan_out) = value.get_mut("fan_out") {
        sort_by_role(fan_out.get_mut("results"));
        sort_by_role(
            fan_out
                .get_mut("joined")
                .and_then(|joined| joined.get_mut("branches")),
        );
    }
    hash_value(&value, &mut hasher);
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

/// Order a list of branch results by role.
fn sort_by_role(list: Option<&mut Value>) {
    if let Some(items) = list.and_then(Value::as_array_mut) {
        items.sort_by(|a, b| a["role"].as_str().cmp(&b["role"].as_str()));
    }
}

fn hash_value(value: &Value, hasher: &mut DefaultHasher) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(b) => (1u8, b).hash(hasher),
        Value::Number(n) => (2u8, n.to_string()).hash(hasher),
        Value::String(s) => (3u8, s).hash(hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(hasher);
            for item in items {
                hash_value(item, hasher);
            }
        }
        Value::Object(map) => {
            5u8.hash(hasher);
            for (name, item) in map {
                if HISTORY_ONLY.contains(&name.as_str()) {
                    continue;
                }
                name.hash(hasher);
                hash_value(item, hasher);
            }
        }
    }
}
