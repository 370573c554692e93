//! `crumb run <pipeline> <pitch>`: validate the pipeline, create a session, resolve and print the
//! bindings, drive the session to its end, and summarise.
//!
//! Exit codes ([`crate::exit_codes`]) follow the session's outcome: `SUCCESS` pass, `FAILED`,
//! `PARTIAL`, `REJECTED`, `STOPPED` (budget, limit, circuit, idle); `AWAITING_PERSON`
//! (`crumb say <id> /approve` then `crumb resume <id>`), `INTERRUPTED`, `INVALID_PIPELINE`,
//! `USAGE_ERROR`, `FAILURE` (internal error).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use indexmap::IndexMap;

use serde_json::{Value, json};

use super::output::compile_or_report;
use super::run_pitch;
use super::run_progress::Progress;
use crate::adapters::mock::Scenario;
use crate::exit_codes::{FAILURE, USAGE_ERROR, exit};
use crate::pipeline::compile::CompileOptions;
use crate::pipeline::table::TransitionTable;
use crate::pipeline::units::parse_duration_ms;
use crate::runtime::bindings;
use crate::runtime::coordinator::{self, Options, Outcome, Session};
use crate::runtime::home::{CrumbHome, Project};
use crate::runtime::lock::CoordinatorLock;
use crate::runtime::meta::SessionStatus;
use crate::runtime::run_config::{Ending, RoleBinding, RunConfig};
use crate::runtime::session::{self, SessionDir};
use crate::transcript::{Draft, Kind, Metadata};

const EXIT_HELP: &str = "Exit codes follow the outcome the pipeline declares: 0 pass, 20 fail (also a pass refused for want of QA or resting on the mock), 21 partial, 22 rejected, 23 stopped (budget, limit, circuit breaker, idle); 10 awaiting a person (`crumb say <id> /approve` then `crumb resume <id>`), 130 interrupted, 3 invalid pipeline, 2 usage or configuration error, 1 internal error.";

/// Arguments of `crumb run`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_HELP)]
pub struct Args {
    /// The pipeline file (e.g. `pipelines/casual.yaml`).
    pub pipeline: PathBuf,
    /// The goal (for `casual`, the game pitch); `-` reads it from stdin. Required unless the
    /// pipeline declares a default for its `goal` input.
    #[arg(conflicts_with = "pitch_file")]
    pub pitch: Option<String>,
    /// Read the goal from this file (for a goal too long or too awkward to quote).
    #[arg(long, value_name = "PATH")]
    pub pitch_file: Option<PathBuf>,
    /// Set one of the pipeline's declared inputs (repeatable): `--set audience=engineers`.
    /// Checked against its type; wins over `--input`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// Read inputs from a YAML or JSON mapping (`audience: engineers`).
    #[arg(long = "input", value_name = "PATH")]
    pub input_file: Option<PathBuf>,
    /// Run every role on this adapter (mock, claude-code, codex, gemini-cli, command).
    #[arg(long, value_name = "ADAPTER")]
    pub adapter: Option<String>,
    /// Bind one role to an adapter (repeatable): `--bind builder=codex`.
    #[arg(long = "bind", value_name = "ROLE=ADAPTER")]
    pub binds: Vec<String>,
    /// A preset from `presets/<NAME>.yaml`.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Make the mock adapter misbehave on purpose.
    #[arg(long, value_enum, value_name = "SCENARIO")]
    pub mock_scenario: Option<Scenario>,
    /// Keep a session that waits for a person open (instead of exiting 10).
    #[arg(long)]
    pub wait: bool,
    /// Print the final summary as JSON (and no progress).
    #[arg(long)]
    pub json: bool,
    /// The crumb home (default `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Override every role's idle timeout (e.g. `2s`, `500ms`).
    #[arg(long, value_name = "DURATION", env = "CRUMB_IDLE_TIMEOUT")]
    pub idle_timeout: Option<String>,
    /// Override every role's wall-clock timeout (e.g. `10m`).
    #[arg(long, value_name = "DURATION", env = "CRUMB_WALL_TIMEOUT")]
    pub wall_timeout: Option<String>,
    /// Start a fresh session even when a session for the same pipeline and pitch was left
    /// behind by a coordinator that died (by default that session is resumed).
    #[arg(long)]
    pub new: bool,
    #[command(flatten)]
    pub dry: super::run_dry::DryRunArgs,
}

pub fn run(args: &Args) -> ExitCode {
    Failure::exit("run", execute(args))
}

/// Why a command stopped before (or while) driving a session.
pub(crate) enum Failure {
    Usage(String),
    Internal(String),
    /// Already explained on stderr (an invalid pipeline's diagnostics); exit with this code.
    Reported(u8),
}

impl Failure {
    /// The process exit of `crumb <command>`: the code, or the failure's line on stderr and its code.
    pub(crate) fn exit(command: &str, result: Result<u8, Failure>) -> ExitCode {
        match result {
            Ok(code) | Err(Failure::Reported(code)) => exit(code),
            Err(Failure::Usage(message)) => {
                eprintln!("crumb {command}: {message}");
                exit(USAGE_ERROR)
            }
            Err(Failure::Internal(message)) => {
                eprintln!("crumb {command}: {message}");
                exit(FAILURE)
            }
        }
    }
}

/// The dead session of the same pipeline and pitch, with its lock taken, if there is one; every
/// same-pitch session passed over gets one line saying why.
fn take_over_dead(
    home: &CrumbHome,
    project: &Project,
    pipeline: &Path,
    pitch: &str,
    inputs: &IndexMap<String, Value>,
) -> Option<(SessionDir, CoordinatorLock)> {
    let (found, skipped) = crate::runtime::dead_session::find(home, project, pipeline, pitch);
    for line in &skipped {
        eprintln!("crumb run: {line}; starting a fresh one");
    }
    let dir = found?;
    // Same pitch, other inputs: a different run, never resumed in this one's place.
    let recorded = dir.run_config().ok().flatten().map(|c| c.inputs);
    if recorded.as_ref().is_some_and(|recorded| recorded != inputs) {
        eprintln!(
            "crumb run: session {} has the same pitch but other inputs; starting a fresh one",
            dir.id()
        );
        return None;
    }
    match CoordinatorLock::acquire(dir.path()) {
        Ok(lock) => Some((dir, lock)),
        Err(err) => {
            eprintln!(
                "crumb run: session {} cannot be taken over ({err}); starting a fresh one",
                dir.id()
            );
            None
        }
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one sequence: compile, read the goal, then a dry run, a resume or a new session"
)]
fn execute(args: &Args) -> Result<u8, Failure> {
    let table = compile_or_report("run", &args.pipeline, CompileOptions::default())
        .map_err(Failure::Reported)?;
    let project = Project::current()
        .map_err(|e| Failure::Internal(format!("cannot determine the project: {e}")))?;
    // Resolved here to refuse bad bindings before a session exists, and again below against the
    // frozen copy, so a pipeline's argv points at the frozen agent scripts.
    let pipeline_dir = args
        .pipeline
        .canonicalize()
        .ok()
        .and_then(|file| file.parent().map(Path::to_path_buf));
    let bound = resolve_bindings(args, &table, &project, pipeline_dir, true)?;
    preflight(&table, &bound)?;
    let idle_timeout_ms = duration_flag("--idle-timeout", args.idle_timeout.as_deref())?;
    let wall_timeout_ms = duration_flag("--wall-timeout", args.wall_timeout.as_deref())?;
    let inputs = super::run_inputs::resolve(&table.inputs, &args.sets, args.input_file.as_deref())
        .map_err(|problems| {
            Failure::Usage(format!("invalid inputs (nothing was started):\n{problems}"))
        })?;
    let goal_default = crate::pipeline::input_values::goal_default(&table.inputs);
    let source = match (
        &args.pitch_file,
        args.pitch.as_deref(),
        goal_default.as_deref(),
    ) {
        (Some(path), _, _) => run_pitch::Source::File(path),
        (None, Some("-"), _) => run_pitch::Source::Stdin,
        (None, Some(text), _) | (None, None, Some(text)) => run_pitch::Source::Text(text),
        (None, None, None) => {
            return Err(Failure::Usage(
                "a goal is required: give it as the positional argument (or --pitch-file); this pipeline declares no default `goal`".into(),
            ));
        }
    };
    let pitch = run_pitch::read(&source).map_err(Failure::Usage)?;
    if pitch.trim().is_empty() {
        return Err(Failure::Usage("the pitch is empty".into()));
    }
    let home = home(args.home.as_deref())?;
    if args.dry.dry_run {
        return super::run_dry::execute(args, &table, &pitch, &inputs, &home, &project);
    }
    if !args.new {
        let found = take_over_dead(&home, &project, &args.pipeline, &pitch, &inputs);
        if let Some((dir, lock)) = found {
            eprintln!(
                "crumb run: resuming session {} (same pipeline and pitch, its coordinator died); --new starts a fresh one",
                dir.id()
            );
            let session = reopen(&dir)?;
            if !args.json {
                print_resumed_header(&dir);
            }
            return drive_and_report(session, lock, args.wait, args.json);
        }
    }
    // Built under a temporary name and renamed into place with `session.start` and `goal`
    // already written, so no reader ever sees a session without them.
    let prepared = session::prepare(&home, &project, &args.pipeline, &pitch)
        .map_err(|e| Failure::Internal(e.to_string()))?;
    let frozen_table = compile_frozen(
        &prepared
            .building_path()
            .join(&prepared.frozen.pipeline_file),
    )?;
    // Argv paths point at the frozen copies where they will be once the folder is in place.
    let frozen_dir = prepared
        .final_path()
        .parent()
        .and_then(|sessions| sessions.canonicalize().ok())
        .map(|sessions| {
            sessions
                .join(&prepared.meta.session_id)
                .join(&prepared.frozen.pipeline_file)
        })
        .and_then(|file| file.parent().map(Path::to_path_buf));
    let bindings = resolve_bindings(args, &frozen_table, &project, frozen_dir, false)?;
    let config = RunConfig {
        pipeline: table.name.clone(),
        pipeline_hash: prepared.frozen.hash.clone(),
        pipeline_file: prepared.frozen.pipeline_file.clone(),
        bindings,
        limits: frozen_table.limits.clone(),
        mock_scenario: args.mock_scenario.map(|s| s.as_str().to_owned()),
        idle_timeout_ms,
        wall_timeout_ms,
        inputs,
    };
    let header =
        header_drafts(&prepared.meta.session_id, &config, &pitch).map_err(Failure::Internal)?;
    let created = prepared
        .commit(header)
        .map_err(|e| Failure::Internal(e.to_string()))?;
    run_pitch::warn_if_too_long(&created.dir, &pitch).map_err(Failure::Internal)?;
    if !args.json {
        println!("session  {}", created.dir.id());
        println!("folder   {}", created.dir.path().display());
        for (role, binding) in &config.bindings {
            let model = binding
                .model
                .as_deref()
                .map(|m| format!(" model {m}"))
                .unwrap_or_default();
            println!(
                "bind     {role} → {}{model} ({})",
                binding.adapter, binding.decided_by
            );
        }
        for line in super::run_inputs::lines(&config.inputs) {
            println!("input    {line}");
        }
        println!("{}", StudioLink::probe(created.dir.id()).line());
    }
    let session = Session {
        dir: created.dir,
        table: Arc::new(frozen_table),
        config: Arc::new(config),
    };
    drive_and_report(session, created.lock, args.wait, args.json)
}

/// The header of a resumed session (`crumb resume`, or `crumb run` finding a dead session).
pub(crate) fn print_resumed_header(dir: &SessionDir) {
    println!("session  {} (resumed)", dir.id());
    println!("folder   {}", dir.path().display());
    // The values recorded at the start: a resume never reads `--set` again.
    let recorded = dir.run_config().ok().flatten().map(|c| c.inputs);
    for line in recorded.iter().flat_map(super::run_inputs::lines) {
        println!("input    {line} (recorded)");
    }
    println!("{}", StudioLink::probe(dir.id()).line());
}

/// Drive a session (new or resumed) to its end, update `meta.json`, print the summary and return
/// the exit code.
pub(crate) fn drive_and_report(
    session: Session,
    lock: CoordinatorLock,
    wait: bool,
    json: bool,
) -> Result<u8, Failure> {
    let dir = session.dir.clone();
    let inputs = session.config.inputs.clone();
    let mut meta = dir
        .read_meta()
        .map_err(|e| Failure::Internal(e.to_string()))?;
    meta.set_status(SessionStatus::Running, Some(std::process::id()));
    dir.write_meta(&meta)
        .map_err(|e| Failure::Internal(e.to_string()))?;
    let mut progress = Progress::new(json, session.config.limits.tokens_hard, &session.table);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the async runtime: {e}")))?;
    let shutdown = super::signals::interrupted();
    let outcome = runtime.block_on(coordinator::drive(
        session,
        Options { wait },
        &mut progress,
        shutdown,
    ));
    progress.finish();
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(err) => {
            meta.set_status(SessionStatus::Error, None);
            let _ = dir.write_meta(&meta);
            lock.release();
            return Err(Failure::Internal(err.to_string()));
        }
    };
    let status = match outcome.ending {
        Ending::Awaiting => SessionStatus::Awaiting,
        // Not an ending: no coordinator holds it, and `crumb resume` picks it up.
        Ending::Interrupted => SessionStatus::Running,
        Ending::Done { .. } => SessionStatus::Done,
    };
    meta.set_status(status, None);
    dir.write_meta(&meta)
        .map_err(|e| Failure::Internal(e.to_string()))?;
    lock.release();
    let mut summary = summary(&dir, &outcome);
    summary["inputs"] = json!(inputs);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).unwrap_or_default()
        );
    } else {
        super::run_summary::print(&summary);
    }
    Ok(outcome.ending.exit_code())
}

/// The final summary (also what `--json` prints).
fn summary(dir: &SessionDir, outcome: &Outcome) -> Value {
    let state = &outcome.state;
    let verdict = super::run_verdict::verdict_json(state);
    let entry = dir.artifacts().join("game/index.html");
    let (status, ended, reason) = match &outcome.ending {
        Ending::Done { outcome, reason } => ("done", *outcome, Some(reason.clone())),
        Ending::Awaiting => ("awaiting", None, None),
        Ending::Interrupted => ("interrupted", None, None),
    };
    json!({
        "session_id": dir.id(),
        "folder": dir.path().display().to_string(),
        "status": status,
        "outcome": ended,
        "reason": reason,
        "exit_code": outcome.ending.exit_code(),
        "degraded": state.degraded(),
        "swaps": crate::runtime::run_config::swaps_json(state),
        "verdict": verdict,
        "verifications": state.verification.count,
        "events": state.events,
        "tokens": state.budgets.tokens,
        "game": entry.is_file().then(|| entry.display().to_string()),
        "agent_error": last_agent_error(dir),
        "studio": StudioLink::probe(dir.id()).to_json(),
    })
}

/// The last failed agent turn of a session that did not pass, in the CLI's words with the fix:
/// what a person reads first when a real agent could not do its work.
fn last_agent_error(dir: &SessionDir) -> Value {
    let Ok((events, _)) = crate::transcript::reader::read_path(&dir.transcript()) else {
        return Value::Null;
    };
    let passed = events
        .iter()
        .rev()
        .find(|e| e.kind == crate::transcript::Kind::Done)
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d.get("outcome"))
        .is_some_and(|o| o == "pass");
    if passed {
        return Value::Null;
    }
    events
        .iter()
        .rev()
        .filter(|e| e.kind == crate::transcript::Kind::Error)
        .filter_map(|e| e.data.as_ref())
        .find(|d| d.get("class").is_some())
        .map_or(Value::Null, |d| {
            json!({
                "role": d.get("role"),
                "adapter": d.get("adapter"),
                "class": d.get("class"),
                "message": d.get("message"),
                "hint": d.get("hint"),
            })
        })
}

/// Where this session can be watched in Studio: straight there when a Studio is running, else
/// the command that starts one and the address it will have.
pub(crate) struct StudioLink {
    pub(crate) url: String,
    pub(crate) running: bool,
}

impl StudioLink {
    pub(crate) fn probe(session_id: &str) -> Self {
        if let Some(url) = crate::studio::probe::deep_link(session_id) {
            return StudioLink { url, running: true };
        }
        let port = std::env::var(crate::studio::probe::PORT_ENV)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(crate::studio::probe::DEFAULT_PORT);
        StudioLink {
            url: crate::studio::probe::session_url(port, session_id),
            running: false,
        }
    }

    /// One line of the header and of the summary.
    pub(crate) fn line(&self) -> String {
        if self.running {
            format!("studio   {}", self.url)
        } else {
            format!("studio   crumb studio → {}", self.url)
        }
    }

    fn to_json(&self) -> Value {
        json!({ "url": self.url, "running": self.running })
    }
}

fn compile_frozen(path: &Path) -> Result<TransitionTable, Failure> {
    crate::runtime::session_dir::compile_frozen(path).map_err(|e| Failure::Internal(e.to_string()))
}

/// `session.start` (the run configuration) and the `goal`: the transcript's first events, written
/// in one append.
pub(crate) fn header_drafts(
    id: &str,
    config: &RunConfig,
    pitch: &str,
) -> Result<Vec<Draft>, String> {
    let Ok(Value::Object(data)) = serde_json::to_value(config) else {
        return Err("cannot record the run configuration".into());
    };
    let provenance = Metadata {
        deterministic: Some(true),
        tool: Some("crumb-run@v1".into()),
        ..Metadata::default()
    };
    Ok(vec![
        Draft::new("system", Kind::SessionStart)
            .body(format!(
                "session {id} started: pipeline {} ({})",
                config.pipeline, config.pipeline_hash
            ))
            .data(data)
            .metadata(provenance),
        Draft::new("user", Kind::Goal).body(pitch),
    ])
}

/// Load and compile a session's frozen pipeline and its recorded configuration (for resume).
pub(crate) fn reopen(dir: &SessionDir) -> Result<Session, Failure> {
    let table = dir.table().map_err(|e| Failure::Internal(e.to_string()))?;
    let config = dir
        .run_config()
        .map_err(|e| Failure::Internal(e.to_string()))?;
    let config = config.ok_or_else(|| {
        Failure::Internal(
            "the transcript has no readable session.start; it cannot be resumed".into(),
        )
    })?;
    // Without a goal, a resumed session could only stall and end `idle`.
    if let Some(why) = crate::runtime::dead_session::unresumable(&dir.transcript()) {
        return Err(Failure::Internal(format!(
            "{why}; it cannot be resumed (crumb run --new starts afresh)"
        )));
    }
    Ok(Session {
        dir: dir.clone(),
        table: Arc::new(table),
        config: Arc::new(config),
    })
}

pub(crate) fn home(flag: Option<&Path>) -> Result<CrumbHome, Failure> {
    match flag {
        Some(path) => Ok(CrumbHome::at(path)),
        None => CrumbHome::from_env().map_err(|e| Failure::Usage(e.to_string())),
    }
}

fn duration_flag(flag: &str, value: Option<&str>) -> Result<Option<u64>, Failure> {
    value
        .map(|text| {
            parse_duration_ms(text).map_err(|e| Failure::Usage(format!("{flag} {text}: {e}")))
        })
        .transpose()
        .map(|ms| ms.filter(|&ms| ms > 0))
}

/// The agent part of `crumb doctor` for the adapters the roles are bound to: a CLI that says it
/// is logged out stops the run here, with the fix, instead of failing its first turn.
fn preflight(
    table: &TransitionTable,
    bound: &IndexMap<String, RoleBinding>,
) -> Result<(), Failure> {
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
    let problems = crate::doctor::preflight(&roles, &bindings::Environment::from_process());
    if problems.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("{}\n  fix: {}", p.what, p.fix))
        .collect();
    Err(Failure::Usage(format!(
        "an agent CLI cannot run (checked before the first spawn; `crumb doctor` shows everything):\n{}",
        lines.join("\n")
    )))
}

/// Every role's binding: `--bind` > `--adapter` > `.crumb/config.yaml` > preset > the pipeline's
/// `adapter:` > ambient > mock (see `runtime::bindings`). Presets are looked up next to the
/// pipeline's folder, then in the project.
fn resolve_bindings(
    args: &Args,
    table: &TransitionTable,
    project: &Project,
    pipeline_dir: Option<PathBuf>,
    print_notes: bool,
) -> Result<IndexMap<String, RoleBinding>, Failure> {
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
        pipeline_dir,
        cwd: std::env::current_dir().ok(),
    };
    let resolved =
        bindings::resolve(&roles, &request, &context).map_err(|e| Failure::Usage(e.to_string()))?;
    if print_notes && !args.json {
        for note in &resolved.notes {
            eprintln!("crumb run: note: {note}");
        }
    }
    Ok(resolved.to_role_bindings())
}
