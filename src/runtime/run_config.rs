//! What a run is configured with, recorded once in `session.start` so that `crumb resume` reuses
//! exactly the same bindings, scenario and timeouts (a resumed run never falls back to defaults),
//! and how a finished run is summarised.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapters::AdapterKind;
use crate::pipeline::preset::Effort;
use crate::pipeline::preset::PriceOverride;
use crate::pipeline::table::LimitsSpec;
use crate::transcript::{Event, Kind};
use crate::vocab::Outcome;

/// Where one role runs, and which layer decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleBinding {
    pub adapter: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    pub harness: String,
    pub provider: String,
    /// The `command` adapter's argv (paths already resolved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// A model server to use instead of the vendor's (a preset's `base_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The variable holding that server's key (the key itself is never recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// `--bind`, `--adapter`, `preset <name>`, `pipeline`, `default`.
    pub decided_by: String,
}

impl RoleBinding {
    /// The effort as the adapters take it.
    pub(crate) fn effort(&self) -> Option<Effort> {
        self.effort
            .as_deref()
            .and_then(|e| serde_json::from_value(Value::String(e.to_owned())).ok())
    }

    /// A binding to `adapter` with its default harness and provider.
    pub(crate) fn to_adapter(adapter: AdapterKind, decided_by: impl Into<String>) -> Self {
        RoleBinding {
            adapter: adapter.as_str().to_owned(),
            model: None,
            effort: None,
            harness: adapter.default_harness().to_owned(),
            provider: adapter.default_provider().to_owned(),
            command: Vec::new(),
            base_url: None,
            api_key_env: None,
            decided_by: decided_by.into(),
        }
    }
}

/// The run's configuration: the `data` of `session.start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub pipeline: String,
    pub pipeline_hash: String,
    /// The frozen pipeline file, relative to the session folder.
    pub pipeline_file: String,
    pub bindings: IndexMap<String, RoleBinding>,
    pub limits: LimitsSpec,
    /// The mock adapter's scenario (`pass` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock_scenario: Option<String>,
    /// Overrides every role's idle timeout (tests, impatient people).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Overrides every role's wall-clock timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_timeout_ms: Option<u64>,
    /// The declared inputs' values (`--set`, `--input`, defaults), resolved and type-checked once
    /// at the start: resume, replay and forks read them from here, never from the command line.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub inputs: IndexMap<String, Value>,
    /// The preset's own `prices:`, kept with the session so a resumed or forked run estimates
    /// costs as the first did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<PriceOverride>,
}

impl RunConfig {
    /// The configuration recorded in the first `session.start` of `events`.
    pub(crate) fn from_events<'a>(
        events: impl IntoIterator<Item = &'a Event>,
    ) -> Option<RunConfig> {
        let start = events.into_iter().find(|e| e.kind == Kind::SessionStart)?;
        serde_json::from_value(Value::Object(start.data.clone()?)).ok()
    }
}

/// How a run ended, for the summary and the exit code.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Ending {
    /// A terminal `done` with this outcome (`None`: an old transcript recorded none) and reason.
    Done {
        outcome: Option<Outcome>,
        reason: String,
    },
    /// Waiting for a person's `/approve` or `/veto`.
    Awaiting,
    /// Stopped by Ctrl-C or SIGTERM; `crumb resume` continues where it was.
    Interrupted,
}

impl Ending {
    /// The documented exit code of `crumb run` and `crumb resume` for this ending. It follows the
    /// outcome alone; the reason is never read.
    pub(crate) fn exit_code(&self) -> u8 {
        use crate::exit_codes::{AWAITING_PERSON, INTERRUPTED};
        match self {
            Ending::Done { outcome, .. } => outcome_exit_code(*outcome),
            Ending::Awaiting => AWAITING_PERSON,
            Ending::Interrupted => INTERRUPTED,
        }
    }
}

/// The adapter swaps of a session, as `--json` and Studio show them.
pub(crate) fn swaps_json(state: &crate::engine::State) -> Value {
    state
        .swaps
        .iter()
        .map(
            |s| serde_json::json!({ "role": s.role, "from": s.from, "to": s.to, "cause": s.cause }),
        )
        .collect()
}

/// The exit code of a session that ended with `outcome` (unknown counts as failed: nothing says
/// it passed).
pub(crate) fn outcome_exit_code(outcome: Option<Outcome>) -> u8 {
    use crate::exit_codes::{FAILED, PARTIAL, REJECTED, STOPPED, SUCCESS};
    match outcome {
        Some(Outcome::Pass) => SUCCESS,
        Some(Outcome::Fail) | None => FAILED,
        Some(Outcome::Partial) => PARTIAL,
        Some(Outcome::Rejected) => REJECTED,
        Some(Outcome::Stopped) => STOPPED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::table::TransitionTable;
    use proptest::prelude::*;

    fn table() -> TransitionTable {
        let source = include_str!("../../tests/fixtures/run/casual-static.yaml");
        let options = crate::pipeline::CompileOptions {
            check_templates: false,
        };
        crate::pipeline::compile_str(
            source,
            std::path::Path::new("casual-static.yaml"),
            &options,
            &crate::fs::real_files(),
        )
        .table
        .expect("the fixture compiles")
    }

    proptest! {
        #[test]
        fn run_config_survives_the_session_start_round_trip(scenario in proptest::option::of("[a-z-]{1,12}"), idle in proptest::option::of(1u64..10_000_000)) {
            let table = table();
            let config = RunConfig {
                pipeline: table.name.clone(),
                pipeline_hash: "sha256:00".into(),
                pipeline_file: "pipeline/pipelines/casual-static.yaml".into(),
                bindings: table.roles.iter().map(|r| (r.id.clone(), RoleBinding::to_adapter(AdapterKind::Mock, "test"))).collect(),
                limits: table.limits.clone(),
                mock_scenario: scenario,
                idle_timeout_ms: idle,
                wall_timeout_ms: None,
                inputs: [("audience".to_owned(), Value::from("kids"))].into_iter().collect(),
                prices: None,
            };
            let Value::Object(data) = serde_json::to_value(&config).unwrap() else { panic!("an object") };
            let event = crate::transcript::Draft::new("system", Kind::SessionStart)
                .data(data)
                .into_event("01J00000000000000000000000".into(), "2026-11-30T00:00:00.000Z".into(), "s".into());
            prop_assert_eq!(RunConfig::from_events([&event]), Some(config));
        }
    }

    #[test]
    fn exit_codes_follow_the_outcome_never_the_reason() {
        let done = |outcome, reason: &str| Ending::Done {
            outcome,
            reason: reason.into(),
        };
        assert_eq!(done(Some(Outcome::Pass), "accepted").exit_code(), 0);
        assert_eq!(done(Some(Outcome::Rejected), "approved").exit_code(), 22);
        assert_eq!(done(Some(Outcome::Fail), "verdict_pass").exit_code(), 20);
        assert_eq!(done(Some(Outcome::Partial), "good_enough").exit_code(), 21);
        assert_eq!(
            done(Some(Outcome::Stopped), "circuit_open:builder").exit_code(),
            23
        );
        assert_eq!(done(None, "verdict_pass").exit_code(), 20, "never guessed");
        assert_eq!(Ending::Awaiting.exit_code(), 10);
        assert_eq!(Ending::Interrupted.exit_code(), 130);
        let codes: std::collections::BTreeSet<u8> = Outcome::ALL
            .into_iter()
            .map(|o| outcome_exit_code(Some(o)))
            .collect();
        assert_eq!(codes.len(), Outcome::ALL.len(), "one code per outcome");
    }
}
