//! The `limits:` block: budgets and the circuit breaker.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pipeline::choices::CircuitAction;

/// Budgets and stop conditions.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Most re-plans (specs after the first) before stopping with `too_many_respec`; checked
    /// before spawning a spec-writing role, so no turn is spent past it.
    #[serde(default = "default_max_respec")]
    pub max_respec: u32,
    /// Most `judge.score` events (from any judging role) before stopping with `too_many_verify`;
    /// checked before a repair or a judging role is spawned.
    #[schemars(range(min = 1))]
    #[serde(default = "default_max_verify")]
    pub max_verify: u32,
    /// Token budget over all spawns.
    #[serde(default = "default_tokens")]
    pub tokens: Budget<u64>,
    /// Wall-clock budget of the session, e.g. `{ warn: 50m, hard: 60m }`.
    #[serde(default = "default_wall_clock")]
    pub wall_clock: Budget<String>,
    /// Consecutive failures without progress before the session is reported stuck.
    #[schemars(range(min = 1))]
    #[serde(default = "default_stuck")]
    pub stuck_after_errors: u32,
    /// Per-role circuit breaker.
    #[serde(default)]
    pub circuit: Circuit,
    /// Most megabytes (MiB) the session's artifact store may hold; an event whose files would
    /// take it past this is refused (`crumb event` records the refusal as an `audit` event).
    #[schemars(range(min = 1))]
    #[serde(default = "default_max_store_mb")]
    pub max_store_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_respec: default_max_respec(),
            max_verify: default_max_verify(),
            tokens: default_tokens(),
            wall_clock: default_wall_clock(),
            stuck_after_errors: default_stuck(),
            circuit: Circuit::default(),
            max_store_mb: default_max_store_mb(),
        }
    }
}

fn default_max_respec() -> u32 {
    3
}
fn default_max_verify() -> u32 {
    5
}
fn default_tokens() -> Budget<u64> {
    Budget {
        warn: 250_000,
        hard: 300_000,
    }
}
fn default_wall_clock() -> Budget<String> {
    Budget {
        warn: "50m".into(),
        hard: "60m".into(),
    }
}
fn default_stuck() -> u32 {
    5
}
fn default_max_store_mb() -> u64 {
    256
}

/// A soft warning threshold and a hard stop.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Budget_{T}")]
pub struct Budget<T> {
    /// Crossing this records a warning once.
    pub warn: T,
    /// Reaching this stops the session: no turn starts once the total is at or past it. Never
    /// zero.
    #[schemars(range(min = 1))]
    pub hard: T,
}

/// Circuit breaker settings.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Circuit {
    /// Consecutive failed spawns of a role that open its circuit.
    #[schemars(range(min = 1))]
    #[serde(default = "default_open_after")]
    pub open_after: u32,
    /// What an open circuit does: `swap` to the role's next `fallback` adapter (in order, one per
    /// opening; stop when none is left), or `stop`.
    #[serde(default)]
    pub then: CircuitAction,
}

impl Default for Circuit {
    fn default() -> Self {
        Self {
            open_after: default_open_after(),
            then: CircuitAction::Swap,
        }
    }
}

fn default_open_after() -> u32 {
    3
}
