//! What a run is configured with, recorded once in `session.start` so that `crumb resume` reuses
//! exactly the same bindings, scenario and timeouts (the reference forgot them on resume), and
//! how a finished run is summarised.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapters::AdapterKind;
use crate::pipeline::preset::Preset;
use crate::pipeline::table::{LimitsSpec, TransitionTable};
use crate::transcript::{Event, Kind};

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
    /// `--bind`, `--adapter`, `preset <name>`, `default`.
    pub decided_by: String,
}

impl RoleBinding {
    /// A binding to `adapter` with its default harness and provider.
    pub fn to_adapter(adapter: AdapterKind, decided_by: impl Into<String>) -> Self {
        RoleBinding {
            adapter: adapter.as_str().to_owned(),
            model: None,
            effort: None,
            harness: adapter.default_harness().to_owned(),
            provider: adapter.default_provider().to_owned(),
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
}

impl RunConfig {
    /// The configuration recorded in the first `session.start` of `events`.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Option<RunConfig> {
        let start = events.into_iter().find(|e| e.kind == Kind::SessionStart)?;
        serde_json::from_value(Value::Object(start.data.clone()?)).ok()
    }
}

/// Why bindings could not be resolved (a usage error: exit 2 before anything runs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    #[error("--bind {0}: expected ROLE=ADAPTER")]
    Malformed(String),
    #[error("--bind {role}=…: the pipeline has no role `{role}` (roles: {roles})")]
    UnknownRole { role: String, roles: String },
    #[error(transparent)]
    UnknownAdapter(#[from] crate::adapters::UnknownAdapter),
    #[error("preset `{preset}` binds role `{role}` to unknown adapter `{adapter}`")]
    PresetAdapter {
        preset: String,
        role: String,
        adapter: String,
    },
}

/// Resolve every role's binding: `--bind` > `--adapter` > preset (role entry, then its default)
/// > `mock`.
pub fn resolve_bindings(
    table: &TransitionTable,
    adapter: Option<AdapterKind>,
    binds: &[String],
    preset: Option<&Preset>,
) -> Result<IndexMap<String, RoleBinding>, BindingError> {
    let mut explicit: IndexMap<String, AdapterKind> = IndexMap::new();
    for bind in binds {
        let (role, name) = bind
            .split_once('=')
            .ok_or_else(|| BindingError::Malformed(bind.clone()))?;
        if !table.is_role(role) {
            return Err(BindingError::UnknownRole {
                role: role.to_owned(),
                roles: table
                    .roles
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        explicit.insert(role.to_owned(), name.parse()?);
    }
    let mut out = IndexMap::new();
    for role in &table.roles {
        let binding = if let Some(kind) = explicit.get(&role.id) {
            RoleBinding::to_adapter(*kind, "--bind")
        } else if let Some(kind) = adapter {
            RoleBinding::to_adapter(kind, "--adapter")
        } else if let Some((preset, entry)) =
            preset.and_then(|p| p.roles.get(&role.id).or(p.default.as_ref()).map(|b| (p, b)))
        {
            let kind: AdapterKind =
                entry
                    .adapter
                    .parse()
                    .map_err(|_| BindingError::PresetAdapter {
                        preset: preset.name.clone(),
                        role: role.id.clone(),
                        adapter: entry.adapter.clone(),
                    })?;
            let mut binding = RoleBinding::to_adapter(kind, format!("preset {}", preset.name));
            binding.model.clone_from(&entry.model);
            binding.effort = entry.effort.map(|e| format!("{e:?}").to_lowercase());
            if let Some(harness) = &entry.harness {
                binding.harness.clone_from(harness);
            }
            if let Some(provider) = entry.provider {
                binding.provider = format!("{provider:?}").to_lowercase();
            }
            binding
        } else {
            RoleBinding::to_adapter(AdapterKind::Mock, "default (no agent CLI chosen)")
        };
        out.insert(role.id.clone(), binding);
    }
    Ok(out)
}

/// How a run ended, for the summary and the exit code.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Ending {
    /// A terminal `done` with this reason.
    Done { reason: String },
    /// Waiting for a person's `/approve` or `/veto`.
    Awaiting,
}

impl Ending {
    /// The documented exit code: 0 PASS (or approved), 10 awaiting a person, 20 stopped without PASS.
    pub fn exit_code(&self) -> u8 {
        match self {
            Ending::Done { reason } if reason == "verdict_pass" || reason == "approved" => 0,
            Ending::Awaiting => 10,
            Ending::Done { .. } => 20,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table() -> TransitionTable {
        let source = include_str!("../../tests/fixtures/run/casual-static.yaml");
        let options = crate::pipeline::CompileOptions {
            check_templates: false,
        };
        crate::pipeline::compile_str(source, std::path::Path::new("casual-static.yaml"), &options)
            .table
            .expect("the fixture compiles")
    }

    #[test]
    fn bind_beats_adapter_beats_preset_beats_mock() {
        let table = table();
        let preset: Preset = serde_saphyr::from_str(
            "name: p\ndefault: { adapter: codex }\nroles:\n  verifier: { adapter: gemini-cli, model: m1 }\n",
        )
        .unwrap();
        let none = resolve_bindings(&table, None, &[], None).unwrap();
        assert!(none.values().all(|b| b.adapter == "mock"));
        let preset_only = resolve_bindings(&table, None, &[], Some(&preset)).unwrap();
        assert_eq!(preset_only["builder"].adapter, "codex");
        assert_eq!(preset_only["verifier"].adapter, "gemini-cli");
        assert_eq!(preset_only["verifier"].model.as_deref(), Some("m1"));
        let flags = resolve_bindings(
            &table,
            Some(AdapterKind::ClaudeCode),
            &["verifier=mock".to_owned()],
            Some(&preset),
        )
        .unwrap();
        assert_eq!(flags["builder"].adapter, "claude-code");
        assert_eq!(flags["builder"].decided_by, "--adapter");
        assert_eq!(flags["verifier"].adapter, "mock");
        assert_eq!(flags["verifier"].decided_by, "--bind");
    }

    #[test]
    fn bad_binds_and_preset_adapters_are_errors() {
        let table = table();
        for bind in ["builder", "ghost=mock", "builder=gpt", "=mock", "builder="] {
            assert!(
                resolve_bindings(&table, None, &[bind.to_owned()], None).is_err(),
                "{bind}"
            );
        }
        let preset: Preset =
            serde_saphyr::from_str("name: p\ndefault: { adapter: nope }\n").unwrap();
        assert!(matches!(
            resolve_bindings(&table, None, &[], Some(&preset)),
            Err(BindingError::PresetAdapter { .. })
        ));
    }

    proptest! {
        #[test]
        fn any_bind_string_resolves_or_is_refused(binds in proptest::collection::vec(".{0,40}", 0..4)) {
            let table = table();
            match resolve_bindings(&table, None, &binds, None) {
                Ok(bindings) => prop_assert_eq!(bindings.len(), table.roles.len()),
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }

        #[test]
        fn run_config_survives_the_session_start_round_trip(scenario in proptest::option::of("[a-z-]{1,12}"), idle in proptest::option::of(1u64..10_000_000)) {
            let table = table();
            let config = RunConfig {
                pipeline: table.name.clone(),
                pipeline_hash: "sha256:00".into(),
                pipeline_file: "pipeline/pipelines/casual-static.yaml".into(),
                bindings: resolve_bindings(&table, None, &[], None).unwrap(),
                limits: table.limits.clone(),
                mock_scenario: scenario,
                idle_timeout_ms: idle,
                wall_timeout_ms: None,
            };
            let Value::Object(data) = serde_json::to_value(&config).unwrap() else { panic!("an object") };
            let event = crate::transcript::Draft::new("system", Kind::SessionStart)
                .data(data)
                .into_event("01J00000000000000000000000".into(), "2026-11-30T00:00:00.000Z".into(), "s".into());
            prop_assert_eq!(RunConfig::from_events([&event]), Some(config));
        }
    }

    #[test]
    fn exit_codes_follow_the_documented_table() {
        assert_eq!(
            Ending::Done {
                reason: "verdict_pass".into()
            }
            .exit_code(),
            0
        );
        assert_eq!(
            Ending::Done {
                reason: "approved".into()
            }
            .exit_code(),
            0
        );
        assert_eq!(Ending::Awaiting.exit_code(), 10);
        assert_eq!(
            Ending::Done {
                reason: "circuit_open:builder".into()
            }
            .exit_code(),
            20
        );
        assert_eq!(
            Ending::Done {
                reason: "idle".into()
            }
            .exit_code(),
            20
        );
    }
}
