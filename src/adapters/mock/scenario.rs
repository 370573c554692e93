//! Ways the mock adapter misbehaves on purpose, so repair, redesign, human approval, the circuit
//! breaker and the timeouts can be exercised without a model.

use std::fmt;
use std::str::FromStr;

/// Environment variable carrying the scenario to every mock spawn.
pub(crate) const SCENARIO_ENV: &str = "CRUMB_MOCK_SCENARIO";
/// Environment variable slowing every mock step down (milliseconds), for kill-and-resume tests.
pub(crate) const DELAY_ENV: &str = "CRUMB_MOCK_DELAY_MS";

/// A mock scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Scenario {
    /// Everything works: spec, build, QA, PASS.
    #[default]
    Pass,
    /// The first verdict is FAIL × Important (builder repair), then PASS.
    FailOnce,
    /// The first verdict is FAIL × Critical (planner redesign), then PASS.
    CriticalOnce,
    /// Every verdict is PARTIAL: the session waits for a person's `/approve` or `/veto`.
    Partial,
    /// The builder's first turn exits non-zero.
    CrashOnce,
    /// Every builder turn exits non-zero (opens the circuit breaker).
    CrashAlways,
    /// The builder's first turn hangs silently (with a child) until the idle timeout kills it.
    HangOnce,
}

impl Scenario {
    pub(crate) const ALL: [Scenario; 7] = [
        Scenario::Pass,
        Scenario::FailOnce,
        Scenario::CriticalOnce,
        Scenario::Partial,
        Scenario::CrashOnce,
        Scenario::CrashAlways,
        Scenario::HangOnce,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scenario::Pass => "pass",
            Scenario::FailOnce => "fail-once",
            Scenario::CriticalOnce => "critical-once",
            Scenario::Partial => "partial",
            Scenario::CrashOnce => "crash-once",
            Scenario::CrashAlways => "crash-always",
            Scenario::HangOnce => "hang-once",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown mock scenario `{0}` (known: pass, fail-once, critical-once, partial, crash-once, crash-always, hang-once)"
)]
pub struct UnknownScenario(pub String);

impl FromStr for Scenario {
    type Err = UnknownScenario;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Scenario::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| UnknownScenario(name.chars().take(64).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_garbage_is_refused() {
        for scenario in Scenario::ALL {
            assert_eq!(scenario.as_str().parse::<Scenario>(), Ok(scenario));
        }
        assert!("".parse::<Scenario>().is_err());
        assert!("PASS".parse::<Scenario>().is_err());
        assert!("x".repeat(10_000).parse::<Scenario>().is_err());
    }
}
