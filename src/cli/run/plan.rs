//! What `crumb run` will do, resolved once from its arguments before any session exists: the
//! pipeline compiled, the bindings resolved and preflighted, the inputs checked, the goal read,
//! the home found. Everything after (a dry run, a take-over, a new session) reads the plan and
//! resolves nothing again; a bad request stops here with nothing started.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::Value;

use super::args::Args;
use super::{inputs, pitch};
use crate::adapters::mock::Scenario;
use crate::cli::error::CommandError;
use crate::cli::pipeline_file::compile_recording;
use crate::home::{CrumbHome, Project};
use crate::pipeline::compile::CompileOptions;
use crate::pipeline::preset::PriceOverride;
use crate::pipeline::table::TransitionTable;
use crate::pipeline::units::parse_duration_ms;
use crate::runtime::bindings;
use crate::runtime::freeze::FreezeSource;
use crate::runtime::run_config::RoleBinding;

/// A run, resolved.
pub(crate) struct Plan {
    /// The pipeline file as given (what the session freezes).
    pub(crate) pipeline: PathBuf,
    /// The pipeline, compiled once: the frozen copy is the same bytes, and a table holds no
    /// paths, so the session runs this table.
    pub(crate) table: TransitionTable,
    /// The real paths of the files that compile read (fragments, templates): what the session
    /// freezes with the pipeline, found without reading the YAML again.
    pub(crate) read: Vec<PathBuf>,
    pub(crate) project: Project,
    pub(crate) home: CrumbHome,
    /// Every role's binding. A `command` argv the pipeline itself declares is kept as written,
    /// relative to the pipeline: it is placed against the frozen copy when the session is
    /// built ([`Plan::bindings_in`]).
    pub(crate) bindings: IndexMap<String, RoleBinding>,
    pub(crate) inputs: IndexMap<String, Value>,
    /// The preset's own `prices:`, if it declares any.
    pub(crate) prices: Option<PriceOverride>,
    pub(crate) pitch: String,
    pub(crate) idle_timeout_ms: Option<u64>,
    pub(crate) wall_timeout_ms: Option<u64>,
    pub(crate) mock_scenario: Option<Scenario>,
}

impl Plan {
    /// Resolve `args`, in the order people meet the problems: the pipeline, the bindings and
    /// their logins, the flags, the inputs, the goal, the home.
    pub(crate) fn from_args(args: &Args) -> Result<Plan, CommandError> {
        let (table, read) = compile_recording(&args.pipeline, CompileOptions::default())?;
        let project = Project::current()
            .map_err(|e| CommandError::failure("cannot determine the project").because(e))?;
        let (bindings, prices) = resolve_bindings(args, &table, &project)?;
        // A dry run spawns no agent, so it needs no CLI installed.
        preflight(&table, &bindings, !args.dry.dry_run)?;
        let idle_timeout_ms = duration_flag("--idle-timeout", args.idle_timeout.as_deref())?;
        let wall_timeout_ms = duration_flag("--wall-timeout", args.wall_timeout.as_deref())?;
        let inputs = inputs::check(&table.inputs, &args.sets, args.input_file.as_deref())?;
        let pitch = read_pitch(args, &table)?;
        let home = crate::cli::home_flag::resolve(args.drive.home.as_deref())?;
        Ok(Plan {
            pipeline: args.pipeline.clone(),
            table,
            read,
            project,
            home,
            bindings,
            inputs,
            prices,
            pitch,
            idle_timeout_ms,
            wall_timeout_ms,
            mock_scenario: args.mock_scenario,
        })
    }

    /// What the session freezes: the pipeline, its table and the files its compile read.
    pub(crate) fn freeze_source(&self) -> FreezeSource<'_> {
        FreezeSource {
            path: &self.pipeline,
            table: &self.table,
            read: &self.read,
        }
    }

    /// The bindings of a session whose frozen pipeline sits in `frozen_dir`: the pipeline's own
    /// `command` argv resolved against the frozen copy, so it runs the frozen agent scripts.
    pub(crate) fn bindings_in(&self, frozen_dir: Option<&Path>) -> IndexMap<String, RoleBinding> {
        let mut placed = self.bindings.clone();
        let Some(dir) = frozen_dir else {
            return placed;
        };
        for role in &self.table.roles {
            let declared = role.adapter.as_ref().map_or(&[][..], |a| a.command());
            if let Some(binding) = placed.get_mut(&role.id)
                && !declared.is_empty()
                && binding.command == declared
            {
                binding.command = crate::pipeline::argv::resolve(declared, dir);
            }
        }
        placed
    }
}

/// The goal: `--pitch-file`, `-` (stdin), the positional argument, else the pipeline's default.
fn read_pitch(args: &Args, table: &TransitionTable) -> Result<String, CommandError> {
    let goal_default = crate::pipeline::input_values::goal_default(&table.inputs);
    let source = match (
        &args.pitch_file,
        args.pitch.as_deref(),
        goal_default.as_deref(),
    ) {
        (Some(path), _, _) => pitch::Source::File(path),
        (None, Some("-"), _) => pitch::Source::Stdin,
        (None, Some(text), _) | (None, None, Some(text)) => pitch::Source::Text(text),
        (None, None, None) => {
            return Err(CommandError::usage(
                "a goal is required: give it as the positional argument (or --pitch-file); this pipeline declares no default `goal`",
            ));
        }
    };
    let pitch = pitch::read(&source).map_err(CommandError::usage)?;
    if pitch.trim().is_empty() {
        return Err(CommandError::usage("the pitch is empty"));
    }
    Ok(pitch)
}

fn duration_flag(flag: &str, value: Option<&str>) -> Result<Option<u64>, CommandError> {
    value
        .map(|text| {
            parse_duration_ms(text).map_err(|e| CommandError::usage(format!("{flag} {text}: {e}")))
        })
        .transpose()
        .map(|ms| ms.filter(|&ms| ms > 0))
}

/// The agent part of `crumb doctor` for the adapters the roles are bound to: a CLI that says it
/// is logged out stops the run here, with the fix, instead of failing its first turn.
fn preflight(
    table: &TransitionTable,
    bound: &IndexMap<String, RoleBinding>,
    spawns: bool,
) -> Result<(), CommandError> {
    let roles: Vec<(String, crate::adapters::AdapterKind, Vec<String>)> = table
        .roles
        .iter()
        .filter_map(|role| {
            let binding = bound.get(&role.id)?;
            // A role pointed at a model server of its own needs no vendor login.
            if binding.base_url.is_some() {
                return None;
            }
            let adapter = binding.adapter.parse().ok()?;
            Some((role.id.clone(), adapter, role.fallback.clone()))
        })
        .collect();
    let env = bindings::Environment::from_process();
    let mut problems = if spawns {
        missing_clis(table, bound, &env)
    } else {
        Vec::new()
    };
    problems.extend(crate::doctor::preflight(&roles, &env));
    if problems.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("{}\n  fix: {}", p.what, p.fix))
        .collect();
    Err(CommandError::usage(format!(
        "an agent CLI cannot run (checked before the first spawn; `crumb doctor` shows everything):\n{}",
        lines.join("\n")
    )))
}

/// Roles bound to an agent CLI that is not on `PATH` and that no fallback of theirs escapes:
/// every turn would fail the same way, so the run stops here (a usage error, which a
/// Kubernetes Job's `podFailurePolicy` fails its index on at once) instead of after three
/// failed spawns. A role pointed at a model server still needs its CLI.
fn missing_clis(
    table: &TransitionTable,
    bound: &IndexMap<String, RoleBinding>,
    env: &bindings::Environment,
) -> Vec<crate::doctor::Problem> {
    table
        .roles
        .iter()
        .filter_map(|role| {
            let binding = bound.get(&role.id)?;
            let adapter: crate::adapters::AdapterKind = binding.adapter.parse().ok()?;
            let binary = adapter.binary()?;
            let escapes = role.fallback.iter().any(|f| f != adapter.as_str());
            (env.which(binary).is_none() && !escapes).then(|| crate::doctor::Problem {
                what: format!(
                    "{} is bound to {adapter}, whose CLI `{binary}` is not on PATH",
                    role.id
                ),
                fix: adapter
                    .adapter()
                    .install_hint()
                    .unwrap_or("install it, or bind the role to another adapter")
                    .to_owned(),
            })
        })
        .collect()
}

/// Every role's binding: `--bind` > `--adapter` > `.crumb/config.yaml` > preset > the pipeline's
/// `adapter:` > ambient > mock (see `runtime::bindings`). Presets are looked up next to the
/// pipeline's folder, then in the project. The notes are printed once, here.
fn resolve_bindings(
    args: &Args,
    table: &TransitionTable,
    project: &Project,
) -> Result<(IndexMap<String, RoleBinding>, Option<PriceOverride>), CommandError> {
    let roles: Vec<String> = table.roles.iter().map(|r| r.id.clone()).collect();
    let request = bindings::Request {
        adapter: args.adapter.clone(),
        binds: args.binds.clone(),
        preset: args.preset.clone(),
    };
    let beside = args
        .pipeline
        .parent()
        .and_then(Path::parent)
        .map(|root| root.join("presets"));
    let context = bindings::Context {
        config_path: Some(project.root.join(".crumb/config.yaml")),
        preset_dirs: beside
            .into_iter()
            .chain([project.root.join("presets")])
            .collect(),
        env: bindings::Environment::from_process(),
        declared: table
            .roles
            .iter()
            .filter_map(|r| Some((r.id.clone(), r.adapter.clone()?)))
            .collect(),
        // The pipeline's own argv stays as written until the frozen copy exists.
        pipeline_dir: None,
        cwd: std::env::current_dir().ok(),
    };
    let resolved = bindings::resolve(&roles, &request, &context)?;
    if !args.drive.json {
        for note in &resolved.notes {
            eprintln!("crumb run: note: {note}");
        }
    }
    Ok((resolved.to_role_bindings(), resolved.prices.clone()))
}
