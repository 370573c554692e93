//! A plan becomes a session: the dead session of the same pipeline and pitch taken over, or a
//! new one built whole (frozen pipeline, `session.start`, goal) and renamed into place. Also how
//! `crumb resume` reopens a stopped session, and the header each prints.

use crate::fs::stdout::outln;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::inputs;
use super::plan::Plan;
use super::studio_link::StudioLink;
use crate::cli::error::CommandError;
use crate::pipeline::table::TransitionTable;
use crate::runtime::coordinator::Session;
use crate::runtime::lock::CoordinatorLock;
use crate::runtime::run_config::RunConfig;
use crate::runtime::session;
use crate::runtime::session_dir::SessionDir;
use crate::transcript::{Draft, Kind, Metadata};

/// A session ready to drive, with its coordinator lock held.
pub(crate) struct Opened {
    pub(crate) session: Session,
    pub(crate) lock: CoordinatorLock,
}

/// The session `plan` runs in: the dead one of the same pipeline and pitch unless `fresh`
/// (`--new`), else a new one. Prints its header unless `json`.
pub(crate) fn open(plan: Plan, fresh: bool, json: bool) -> Result<Opened, CommandError> {
    if !fresh && let Some((dir, lock)) = take_over_dead(&plan) {
        eprintln!(
            "crumb run: resuming session {} (same pipeline and pitch, its coordinator died); --new starts a fresh one",
            dir.id()
        );
        // Found only when frozen from this very pipeline: the plan's table is its table.
        let session = with_table(&dir, plan.table)?;
        if !json {
            print_resumed_header(&dir);
        }
        return Ok(Opened { session, lock });
    }
    create(plan, json)
}

/// The dead session of the same pipeline and pitch, with its lock taken, if there is one; every
/// same-pitch session passed over gets one line saying why.
fn take_over_dead(plan: &Plan) -> Option<(SessionDir, CoordinatorLock)> {
    let (found, skipped) = crate::runtime::dead_session::find(
        &plan.home,
        &plan.project,
        plan.freeze_source(),
        &plan.pitch,
    );
    for line in &skipped {
        eprintln!("crumb run: {line}; starting a fresh one");
    }
    let dir = found?;
    // Same pitch, other inputs: a different run, never resumed in this one's place.
    let recorded = dir.run_config().ok().flatten().map(|c| c.inputs);
    if recorded
        .as_ref()
        .is_some_and(|recorded| *recorded != plan.inputs)
    {
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

/// A new session for `plan`, built under a temporary name and renamed into place with
/// `session.start` and `goal` already written, so no reader ever sees a session without them.
fn create(plan: Plan, json: bool) -> Result<Opened, CommandError> {
    let sessions = plan.home.sessions_dir(&plan.project);
    let prepared = session::prepare(&plan.home, &plan.project, plan.freeze_source(), &plan.pitch)
        .map_err(|e| not_created(e, &sessions))?;
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
    let config = RunConfig {
        pipeline: plan.table.name.clone(),
        pipeline_hash: prepared.frozen.hash.clone(),
        pipeline_file: prepared.frozen.pipeline_file.clone(),
        bindings: plan.bindings_in(frozen_dir.as_deref()),
        limits: plan.table.limits.clone(),
        mock_scenario: plan.mock_scenario.map(|s| s.as_str().to_owned()),
        idle_timeout_ms: plan.idle_timeout_ms,
        wall_timeout_ms: plan.wall_timeout_ms,
        inputs: plan.inputs,
        prices: plan.prices,
    };
    let header = header_drafts(&prepared.meta.session_id, &config, &plan.pitch)?;
    let created = prepared
        .commit(header)
        .map_err(|e| not_created(e, &sessions))?;
    super::pitch::warn_if_too_long(&created.dir, &plan.pitch)?;
    if !json {
        print_header(&created.dir, &config);
    }
    Ok(Opened {
        session: Session {
            dir: created.dir,
            table: Arc::new(plan.table),
            config: Arc::new(config),
        },
        lock: created.lock,
    })
}

/// The header of a new session: where it is, how each role is bound, the inputs, Studio.
fn print_header(dir: &SessionDir, config: &RunConfig) {
    outln!("session  {}", dir.id());
    outln!("folder   {}", dir.path().display());
    for (role, binding) in &config.bindings {
        let model = binding
            .model
            .as_deref()
            .map(|m| format!(" model {m}"))
            .unwrap_or_default();
        outln!(
            "bind     {role} → {}{model} ({})",
            binding.adapter,
            binding.decided_by
        );
    }
    for line in inputs::lines(&config.inputs) {
        outln!("input    {line}");
    }
    outln!("{}", StudioLink::probe(dir.id()).line());
}

/// The header of a resumed session (`crumb resume`, or `crumb run` finding a dead session).
pub(crate) fn print_resumed_header(dir: &SessionDir) {
    outln!("session  {} (resumed)", dir.id());
    outln!("folder   {}", dir.path().display());
    // The values recorded at the start: a resume never reads `--set` again.
    let recorded = dir.run_config().ok().flatten().map(|c| c.inputs);
    for line in recorded.iter().flat_map(inputs::lines) {
        outln!("input    {line} (recorded)");
    }
    outln!("{}", StudioLink::probe(dir.id()).line());
}

/// `session.start` (the run configuration) and the `goal`: the transcript's first events, written
/// in one append.
pub(crate) fn header_drafts(
    id: &str,
    config: &RunConfig,
    pitch: &str,
) -> Result<Vec<Draft>, CommandError> {
    let Ok(Value::Object(data)) = serde_json::to_value(config) else {
        return Err(CommandError::failure("cannot record the run configuration"));
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
pub(crate) fn reopen(dir: &SessionDir) -> Result<Session, CommandError> {
    with_table(dir, dir.table()?)
}

/// A stopped session with its recorded configuration, driven by `table`.
fn with_table(dir: &SessionDir, table: TransitionTable) -> Result<Session, CommandError> {
    let config = dir.run_config()?.ok_or_else(|| {
        CommandError::failure("the transcript has no readable session.start; it cannot be resumed")
    })?;
    // Without a goal, a resumed session could only stall and end `idle`.
    if let Some(why) = crate::runtime::dead_session::unresumable(&dir.transcript()) {
        return Err(CommandError::failure(format!(
            "{why}; it cannot be resumed (crumb run --new starts afresh)"
        )));
    }
    Ok(Session {
        dir: dir.clone(),
        table: Arc::new(table),
        config: Arc::new(config),
    })
}

/// A session that could not be created. For a write that failed (a full disk) nothing is left
/// behind, and the message says so with the free space: the same command, run again once there
/// is room, starts the session afresh.
fn not_created(err: session::SessionError, sessions: &Path) -> CommandError {
    if !err.is_write() {
        return err.into();
    }
    CommandError::failure(format!(
        "no session was created, a write failed ({})",
        crate::runtime::coordinator::free_space(sessions)
    ))
    .because(err)
    .hint("free some space, then run the same command again")
}
