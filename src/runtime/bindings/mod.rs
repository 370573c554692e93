//! Binding resolution: which adapter (and harness, provider, model, effort) runs each role.
//!
//! One order, applied the same way in every mode, most specific first:
//!
//! 1. `--bind ROLE=ADAPTER[:MODEL]` — a per-role choice on the command line;
//! 2. `--adapter NAME` — every role, on the command line. `--bind` outranks it because it is more
//!    specific: `--adapter codex --bind verifier=claude-code` means "codex, except the verifier";
//! 3. `.crumb/config.yaml` — its `roles.<role>`, then its `default`;
//! 4. the preset (`--preset NAME`, else the config's `preset:`) — its `roles.<role>`, then its
//!    `default`;
//! 5. the pipeline — the role's own `adapter:`;
//! 6. ambient — the agent CLI crumb was launched from, else the first of `claude`, `codex`,
//!    `gemini` on `PATH` (see [`ambient`]);
//! 7. `mock`.
//!
//! A role bound to `command` takes its argv from the highest layer that gives one (a layer may
//! choose the adapter and leave the program to the pipeline: `--adapter command`). A `command`
//! role with no argv anywhere is refused here, before a session exists.
//!
//! Every resolved role records which layer decided it, for the one-line-per-role printout and for
//! `session.start`. Unknown adapters, presets and `--bind` roles are typed errors the CLI maps to
//! exit 2 before anything runs. Roles named in a preset or config that the pipeline does not have
//! are not errors (presets are shared between pipelines); they are reported as notes.

pub(crate) mod ambient;
pub(crate) mod bind_flag;
pub(crate) mod files;

use std::fmt;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;

use crate::adapters::AdapterKind;
use crate::pipeline::model::RoleAdapter;
use crate::pipeline::preset::PriceOverride;
use crate::pipeline::preset::{Binding, Effort};

pub(crate) use ambient::{Ambient, Environment};
pub(crate) use files::{FileError, ProjectConfig};

/// The layer that decided a role's binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "layer", rename_all = "snake_case")]
pub(crate) enum BindingSource {
    /// `--bind ROLE=ADAPTER`.
    Bind,
    /// `--adapter NAME`.
    Adapter,
    /// `.crumb/config.yaml` (`roles.<role>` or `default`).
    Config { entry: ConfigEntry },
    /// A preset (`roles.<role>` or `default`).
    Preset { name: String, entry: ConfigEntry },
    /// The role's `adapter:` in the pipeline file.
    Pipeline,
    /// The agent CLI around crumb.
    Ambient { reason: String },
    /// Nothing else applied.
    Fallback,
}

/// Which entry of a config or preset applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ConfigEntry {
    Role,
    Default,
}

impl fmt::Display for BindingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entry = |entry: &ConfigEntry| match entry {
            ConfigEntry::Role => "role",
            ConfigEntry::Default => "default",
        };
        match self {
            BindingSource::Bind => f.write_str("--bind"),
            BindingSource::Adapter => f.write_str("--adapter"),
            BindingSource::Config { entry: e } => write!(f, ".crumb/config.yaml ({})", entry(e)),
            BindingSource::Preset { name, entry: e } => write!(f, "preset {name} ({})", entry(e)),
            BindingSource::Pipeline => f.write_str("pipeline"),
            BindingSource::Ambient { reason } => write!(f, "ambient: {reason}"),
            BindingSource::Fallback => f.write_str("fallback: no agent CLI found"),
        }
    }
}

/// Where one role runs, fully resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ResolvedBinding {
    pub adapter: AdapterKind,
    pub harness: String,
    pub provider: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// The `command` adapter's argv, its paths resolved against the file (or folder) that gave it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// A model server to use instead of the vendor's (a preset's `base_url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The variable holding that server's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    pub source: BindingSource,
}

impl ResolvedBinding {
    /// `adapter (provider, model M, effort E) ← layer`: what tests compare a resolution with.
    #[cfg(test)]
    pub(crate) fn describe(&self) -> String {
        let mut details = vec![self.provider.clone()];
        if let Some(model) = &self.model {
            details.push(format!("model {model}"));
        }
        if let Some(effort) = self.effort {
            details.push(format!("effort {}", effort_str(effort)));
        }
        if let Some(url) = &self.base_url {
            details.push(format!("model server {url}"));
        }
        if self.harness != self.adapter.default_harness() {
            details.push(format!("harness {}", self.harness));
        }
        format!(
            "{} ({}) ← {}",
            self.adapter,
            details.join(", "),
            self.source
        )
    }
}

impl Bindings {
    /// The per-role bindings in the form `session.start` records ([`crate::runtime::run_config::RoleBinding`]),
    /// with the deciding layer spelled out in `decided_by`.
    pub(crate) fn to_role_bindings(
        &self,
    ) -> IndexMap<String, crate::runtime::run_config::RoleBinding> {
        self.roles
            .iter()
            .map(|(role, binding)| {
                let record = crate::runtime::run_config::RoleBinding {
                    adapter: binding.adapter.as_str().to_owned(),
                    model: binding.model.clone(),
                    effort: binding.effort.map(|effort| effort_str(effort).to_owned()),
                    harness: binding.harness.clone(),
                    provider: binding.provider.clone(),
                    command: binding.command.clone(),
                    base_url: binding.base_url.clone(),
                    api_key_env: binding.api_key_env.clone(),
                    decided_by: binding.source.to_string(),
                };
                (role.clone(), record)
            })
            .collect()
    }
}

fn effort_str(effort: Effort) -> &'static str {
    effort.as_str()
}

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    /// `--adapter NAME`.
    pub adapter: Option<String>,
    /// `--bind ROLE=ADAPTER[:MODEL]`, repeatable.
    pub binds: Vec<String>,
    /// `--preset NAME` (a name or a path to a preset file).
    pub preset: Option<String>,
}

/// Where binding files are and what the environment looks like.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// `.crumb/config.yaml` of the project (may not exist).
    pub config_path: Option<PathBuf>,
    /// Directories searched for `<name>.yaml`, in order.
    pub preset_dirs: Vec<PathBuf>,
    /// Environment variables and `PATH` for ambient detection.
    pub env: Environment,
    /// The pipeline's own `adapter:` per role.
    pub declared: IndexMap<String, RoleAdapter>,
    /// The folder of the pipeline file, which its argv paths are relative to.
    pub pipeline_dir: Option<PathBuf>,
    /// The folder `--bind` argv paths are relative to (where crumb was started).
    pub cwd: Option<PathBuf>,
}

/// Every role's binding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Bindings {
    /// In the pipeline's role order.
    pub roles: IndexMap<String, ResolvedBinding>,
    /// The preset that took part, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Things worth telling the person (roles named in files that this pipeline lacks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The preset's own `prices:`, if it declares any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prices: Option<PriceOverride>,
}

/// Why bindings could not be resolved (all map to exit 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BindingError {
    #[error(
        "{origin}: unknown adapter `{name}` (adapters: {})",
        crate::adapters::adapter_kind::known_names()
    )]
    UnknownAdapter { origin: String, name: String },
    #[error("--bind {value}: unknown role `{role}` (roles: {known})")]
    UnknownRole {
        value: String,
        role: String,
        known: String,
    },
    #[error(
        "--bind {value}: expected ROLE=ADAPTER, ROLE=ADAPTER:MODEL or ROLE=command:'PROGRAM ARGS'"
    )]
    MalformedBind { value: String },
    #[error(
        "role `{role}` runs on the command adapter ({layer}) but nothing says what program to run: declare `adapter: {{ command: [program, args] }}` for it in the pipeline, add `command: [program, args]` to its preset or .crumb/config.yaml binding, or pass --bind {role}=command:'program args'"
    )]
    MissingArgv { role: String, layer: String },
    #[error(transparent)]
    File(#[from] FileError),
}

/// Resolve the binding of each of `roles`.
pub(crate) fn resolve(
    roles: &[String],
    request: &Request,
    context: &Context,
) -> Result<Bindings, BindingError> {
    let binds = bind_flag::parse_binds(&request.binds, roles, context.cwd.as_deref())?;
    let cli_adapter = request
        .adapter
        .as_deref()
        .map(|name| adapter(name, "--adapter"))
        .transpose()?;
    let config = match &context.config_path {
        Some(path) => files::read_config(path)?,
        None => ProjectConfig::default(),
    };
    let preset_name = request.preset.clone().or_else(|| config.preset.clone());
    let (preset, preset_dir) = match &preset_name {
        Some(name) => {
            let (preset, path) = files::load_preset(name, &context.preset_dirs)?;
            (Some(preset), path.parent().map(Path::to_path_buf))
        }
        None => (None, None),
    };
    let config_dir = context
        .config_path
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let mut notes = Vec::new();
    check_layer(
        ".crumb/config.yaml",
        config.default.as_ref(),
        &config.roles,
        roles,
        &mut notes,
    )?;
    if let Some(preset) = &preset {
        let origin = format!("preset {}", preset.name);
        check_layer(
            &origin,
            preset.default.as_ref(),
            &preset.roles,
            roles,
            &mut notes,
        )?;
    }
    let layers: Vec<FileLayer> = [
        Some(FileLayer {
            default: config.default.as_ref(),
            roles: &config.roles,
            dir: config_dir.as_deref(),
            preset: None,
        }),
        preset.as_ref().map(|preset| FileLayer {
            default: preset.default.as_ref(),
            roles: &preset.roles,
            dir: preset_dir.as_deref(),
            preset: Some(&preset.name),
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    // Ambient detection only runs when some role needs it (it may look at PATH).
    let mut ambient = AmbientCache::default();

    let mut resolved = IndexMap::new();
    for role in roles {
        let declared = context.declared.get(role);
        let mut binding = if let Some(bind) = binds.get(role) {
            from_kind(bind.adapter, bind.model.clone(), BindingSource::Bind)
        } else if let Some(kind) = cli_adapter {
            from_kind(kind, None, BindingSource::Adapter)
        } else if let Some(binding) = layers.iter().find_map(|layer| layer.binding(role)) {
            binding
        } else if let Some(declared) = declared {
            from_declared(declared)
        } else {
            ambient_binding(&mut ambient, &context.env)?
        };
        if binding.adapter.adapter().runs_argv() {
            let bind = binds.get(role);
            binding.command = argv_for(bind, &layers, role, declared, context);
            if binding.command.first().is_none_or(String::is_empty) {
                return Err(BindingError::MissingArgv {
                    role: role.clone(),
                    layer: binding.source.to_string(),
                });
            }
        }
        resolved.insert(role.clone(), binding);
    }
    let prices = preset
        .as_ref()
        .filter(|preset| !preset.prices.is_empty())
        .map(|preset| PriceOverride {
            preset: preset.name.clone(),
            models: preset.prices.clone(),
        });
    Ok(Bindings {
        roles: resolved,
        preset: preset.map(|preset| preset.name),
        notes,
        prices,
    })
}

/// Ambient detection's result, once it has run.
#[derive(Default)]
struct AmbientCache {
    detected: bool,
    found: Option<Ambient>,
}

/// The ambient binding (detected once, on first need) or the mock fallback.
fn ambient_binding(
    cache: &mut AmbientCache,
    env: &Environment,
) -> Result<ResolvedBinding, BindingError> {
    if !cache.detected {
        cache.found = ambient::detect(env).map_err(|err| BindingError::UnknownAdapter {
            origin: ambient::AMBIENT_ENV.to_owned(),
            name: err.name,
        })?;
        cache.detected = true;
    }
    Ok(match cache.found.clone() {
        Some(found) => from_kind(
            found.adapter,
            None,
            BindingSource::Ambient {
                reason: found.reason,
            },
        ),
        None => from_kind(AdapterKind::FALLBACK, None, BindingSource::Fallback),
    })
}

/// The argv of the highest layer that gives one (`--bind`, the config, the preset, the
/// pipeline), its paths resolved against where it was written; empty when none does.
fn argv_for(
    bind: Option<&bind_flag::Bind>,
    layers: &[FileLayer],
    role: &str,
    declared: Option<&RoleAdapter>,
    context: &Context,
) -> Vec<String> {
    bind.map(|bind| bind.command.clone())
        .filter(|argv| !argv.is_empty())
        .or_else(|| layers.iter().find_map(|layer| layer.argv(role)))
        .or_else(|| {
            let argv = declared?.command();
            (!argv.is_empty()).then(|| resolve_argv(argv, context.pipeline_dir.as_deref()))
        })
        .unwrap_or_default()
}

/// A binding file taking part in resolution: `.crumb/config.yaml` or the preset.
struct FileLayer<'a> {
    default: Option<&'a Binding>,
    roles: &'a IndexMap<String, Binding>,
    /// The folder its argv paths are relative to.
    dir: Option<&'a Path>,
    /// The preset's name; `None` for the config.
    preset: Option<&'a str>,
}

impl FileLayer<'_> {
    fn binding(&self, role: &str) -> Option<ResolvedBinding> {
        let (binding, entry) = pick(self.default, self.roles, role)?;
        let source = match self.preset {
            None => BindingSource::Config { entry },
            Some(name) => BindingSource::Preset {
                name: name.to_owned(),
                entry,
            },
        };
        Some(from_file(binding, source))
    }

    /// The `command` argv this file gives `role`, resolved against the file's folder.
    fn argv(&self, role: &str) -> Option<Vec<String>> {
        let (binding, _) = pick(self.default, self.roles, role)?;
        let runs_argv = binding
            .adapter
            .parse::<AdapterKind>()
            .is_ok_and(|kind| kind.adapter().runs_argv());
        (runs_argv && !binding.command.is_empty()).then(|| resolve_argv(&binding.command, self.dir))
    }
}

fn resolve_argv(argv: &[String], dir: Option<&Path>) -> Vec<String> {
    match dir {
        Some(dir) => crate::pipeline::argv::resolve(argv, dir),
        None => argv.to_vec(),
    }
}

fn adapter(name: &str, origin: &str) -> Result<AdapterKind, BindingError> {
    name.parse::<AdapterKind>()
        .map_err(|_| BindingError::UnknownAdapter {
            origin: origin.to_owned(),
            name: name.chars().take(64).collect(),
        })
}

/// Validate every adapter named in a config or preset, and note roles this pipeline lacks.
fn check_layer(
    origin: &str,
    default: Option<&Binding>,
    by_role: &IndexMap<String, Binding>,
    roles: &[String],
    notes: &mut Vec<String>,
) -> Result<(), BindingError> {
    if let Some(binding) = default {
        adapter(&binding.adapter, &format!("{origin} default"))?;
    }
    for (role, binding) in by_role {
        adapter(&binding.adapter, &format!("{origin} roles.{role}"))?;
        if !roles.contains(role) {
            notes.push(format!(
                "{origin} binds `{role}`, which this pipeline does not have (ignored)"
            ));
        }
    }
    Ok(())
}

fn pick<'a>(
    default: Option<&'a Binding>,
    by_role: &'a IndexMap<String, Binding>,
    role: &str,
) -> Option<(&'a Binding, ConfigEntry)> {
    by_role
        .get(role)
        .map(|binding| (binding, ConfigEntry::Role))
        .or_else(|| default.map(|binding| (binding, ConfigEntry::Default)))
}

fn from_kind(kind: AdapterKind, model: Option<String>, source: BindingSource) -> ResolvedBinding {
    ResolvedBinding {
        adapter: kind,
        harness: kind.default_harness().to_owned(),
        provider: kind.default_provider().to_owned(),
        model,
        effort: None,
        command: Vec::new(),
        base_url: None,
        api_key_env: None,
        source,
    }
}

/// The pipeline's own `adapter:` (validated by `crumb validate`; an unknown name cannot reach
/// here because the pipeline would not compile).
fn from_declared(declared: &RoleAdapter) -> ResolvedBinding {
    let kind = declared.name().parse().unwrap_or(AdapterKind::FALLBACK);
    let model = match declared {
        RoleAdapter::Command(command) => command.model.clone(),
        RoleAdapter::Name(_) => None,
    };
    from_kind(kind, model, BindingSource::Pipeline)
}

/// A file binding whose adapter was already validated by [`check_layer`].
fn from_file(binding: &Binding, source: BindingSource) -> ResolvedBinding {
    let kind = binding
        .adapter
        .parse::<AdapterKind>()
        .unwrap_or(AdapterKind::FALLBACK);
    let provider = binding.provider.map_or_else(
        || kind.default_provider().to_owned(),
        |provider| {
            serde_json::to_value(provider)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        },
    );
    ResolvedBinding {
        adapter: kind,
        harness: binding
            .harness
            .clone()
            .unwrap_or_else(|| kind.default_harness().to_owned()),
        provider,
        model: binding.model.clone(),
        effort: binding.effort,
        command: Vec::new(),
        base_url: binding.base_url.clone(),
        api_key_env: binding.api_key_env.clone(),
        source,
    }
}

#[cfg(test)]
mod tests;
