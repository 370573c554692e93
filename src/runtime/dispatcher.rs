//! The dispatcher: the only place where effects touch the world. Each job writes the outcome
//! events `src/engine/effect.rs` documents, every one carrying `metadata.effect_id`, so a resumed
//! coordinator can tell exactly which effects already happened.
//!
//! - a spawn: `agent.wake` → the agent process (own process group, prompt on stdin, `CRUMB_*`
//!   environment, `crumb` on `PATH`, logs streamed, wall/idle deadlines) → on failure an `error`
//!   from `system` with `data: {role, reason, effect_id}` → `agent.stop` with usage;
//! - a QA run: the pipeline's checks, bounded by `qa.timeout`, → `qa.result`;
//! - appends, `done` + `session.end`, and the note of a cancel.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::capability::{self, CAPABILITY_ENV};
use super::run_config::{RoleBinding, RunConfig};
use super::session_dir::SessionDir;
use super::storage_probe::storage_short;
use super::stream_tap::StreamTap;
use crate::adapters::mock::agent::PRODUCES_ENV;
use crate::adapters::mock::scenario::SCENARIO_ENV;
use crate::adapters::{AdapterKind, Endpoint, TurnRequest, TurnSummary};
use crate::engine::effect::{RunQa, Spawn};
use crate::pipeline::table::{QaSpec, RoleSpec};
use crate::process::{self, Outcome, SpawnSpec, Stream};
use crate::qa::report::{EXIT_COULD_NOT_RUN, QaStatus};
use crate::transcript::writer::{WriteError, Writer};
use crate::transcript::{Draft, Event, Kind, Metadata};

/// The variable holding the absolute path of the running crumb, for `"$CRUMB_BIN" event`.
pub(crate) const CRUMB_BIN_ENV: &str = "CRUMB_BIN";
/// `metadata.tool` of the events the dispatcher writes.
pub(crate) const DISPATCH_TOOL: &str = "crumb-dispatcher@v1";
/// Extra time QA gets beyond `qa.timeout` before the dispatcher gives up on it.
const QA_MARGIN: Duration = Duration::from_secs(10);
/// How long an agent's process group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// The transcript writer shared by the coordinator and its jobs.
pub(crate) type SharedWriter = Arc<Mutex<Writer>>;

/// Append one draft through the shared writer.
pub(crate) fn append(writer: &SharedWriter, draft: Draft) -> Result<Event, WriteError> {
    lock(writer).append(draft)
}

fn lock(writer: &SharedWriter) -> std::sync::MutexGuard<'_, Writer> {
    writer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Provenance metadata of a runner-written event answering `effect_id`.
pub(crate) fn runner_metadata(effect_id: &str) -> Metadata {
    Metadata {
        deterministic: Some(true),
        tool: Some(DISPATCH_TOOL.to_owned()),
        effect_id: Some(effect_id.to_owned()),
        ..Metadata::default()
    }
}

/// Everything one spawn needs, prepared by the coordinator (which owns the state).
#[derive(Debug)]
pub(crate) struct SpawnJob {
    pub effect: Spawn,
    pub role: RoleSpec,
    pub binding: RoleBinding,
    /// The rendered prompt, or why it could not be rendered.
    pub prompt: Result<String, String>,
    /// Why a file the turn needs could not be written before it starts (its prompt on a full
    /// disk): the turn is then owed, not failed.
    pub unwritten: Option<String>,
    pub session: SessionDir,
    pub config: Arc<RunConfig>,
    /// Re-issued by a resumed coordinator (the earlier attempt was interrupted).
    pub resumed: bool,
    /// Set when the coordinator itself is stopping (Ctrl-C): a turn cut short then records no
    /// outcome, so `crumb resume` re-issues it instead of counting it as done.
    pub shutdown: Arc<AtomicBool>,
    /// Set once the CLI's end-of-turn event has arrived: the coordinator then lets the turn end
    /// on its own when the session finishes instead of cancelling it (a CLI may take seconds to
    /// exit after its result).
    pub result_seen: Arc<AtomicBool>,
}

/// How a finished spawn is reported back to the coordinator.
#[derive(Debug, Clone)]
pub(crate) struct SpawnReport {
    pub role: String,
    pub effect_id: String,
}

/// Run one spawn to its end and write its outcome events.
pub(crate) async fn run_spawn(
    job: SpawnJob,
    writer: SharedWriter,
    cancel: oneshot::Receiver<()>,
) -> SpawnReport {
    let effect_id = job.effect.id.clone();
    let role = job.role.id.clone();
    let n = job.effect.attempt + 1;
    let prompt_path = job.session.prompt_path(&role, n);
    let log_path = job.session.log_path(&role, n);
    let (wake_id, capability, launch) = match open(&job, &writer, &prompt_path, &log_path) {
        Ok(opened) => opened,
        Err(report) => return report,
    };
    let cancelled = async {
        // A dropped sender cancels too: nobody is left to receive the outcome.
        let _ = cancel.await;
    };
    let (spec, kind, notes) = launch;
    write_notes(&writer, &job, notes);
    let (finished, tap) = watch_turn(spec, kind, &role, &writer, &job.result_seen, cancelled).await;
    // The turn is over: nothing it left behind may speak for the role any more, and nothing that
    // left its group (`setsid`, a double fork) outlives it.
    capability.revoke();
    process::group::kill_marked(&format!("{CAPABILITY_ENV}={}", capability.token()));
    if finished.outcome == Outcome::Cancelled && job.shutdown.load(Ordering::SeqCst) {
        return SpawnReport { role, effect_id };
    }
    let summary = tap.summary();
    let produced = produced_since(&job.session.transcript(), &wake_id, &job.role);
    let failure = crate::adapters::diagnose(
        kind,
        &finished.outcome,
        &summary,
        &finished.stderr_tail,
        produced,
    )
    .map(|failure| (reason(&finished.outcome), failure));
    let exit_code = match finished.outcome {
        Outcome::Exited { code } => Some(code),
        _ => None,
    };
    // A failed turn one of whose own writes failed (its `crumb event` or its log says so), or
    // that failed where the session cannot take a write (the agent's own files may have failed
    // the same way): the machine's fault, not the turn's, so nothing is recorded and the
    // coordinator stops with the turn still owed. (A turn that succeeded all the same goes on.)
    let fault = capability.take_fault().or(finished.log_fault.clone());
    let storage = failure
        .as_ref()
        .and_then(|_| fault.or_else(|| storage_short(job.session.path())));
    if let Some(cause) = storage {
        return halted(&writer, &job, cause);
    }
    if let Some((reason, failure)) = &failure {
        write_failure(&writer, &job, reason, failure, &finished);
    }
    let outcome = match (&finished.outcome, &failure) {
        (Outcome::Cancelled, _) => "cancelled",
        (_, Some(_)) => "failed",
        (_, None) => "ok",
    };
    write_stop(
        &writer,
        &job,
        outcome,
        exit_code,
        u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
        &summary,
        tap.omitted(),
    );
    SpawnReport { role, effect_id }
}

/// Run the turn's process with the adapter's parser on its output: tool calls are recorded as
/// the stream shows them, and `result_seen` is set once the CLI's end-of-turn event arrived.
async fn watch_turn(
    spec: SpawnSpec,
    kind: AdapterKind,
    role: &str,
    writer: &SharedWriter,
    result_seen: &AtomicBool,
    cancelled: impl std::future::Future<Output = ()>,
) -> (process::SpawnReport, StreamTap) {
    let mut tap = StreamTap::new(kind);
    let finished = process::run_watched(
        spec,
        |stream, line| match stream {
            Stream::Stdout => {
                let flow = tap.line(line);
                for draft in tap.new_tool_call_drafts(role) {
                    let _ = append(writer, draft);
                }
                if tap.result_arrived() {
                    result_seen.store(true, Ordering::SeqCst);
                }
                flow
            }
            Stream::Stderr => tap.stderr_line(line),
        },
        cancelled,
    )
    .await;
    (finished, tap)
}

/// A storage fault is never the turn's: halt the writer (the coordinator stops, the turn still
/// owed) and report the spawn over without an outcome.
fn halted(writer: &SharedWriter, job: &SpawnJob, cause: String) -> SpawnReport {
    lock(writer).halt(cause);
    SpawnReport {
        role: job.role.id.clone(),
        effect_id: job.effect.id.clone(),
    }
}

/// Open the turn (its `agent.wake` and capability) and build its process, or report why not: a
/// file the turn needs that cannot be written halts, anything else fails the turn.
fn open(
    job: &SpawnJob,
    writer: &SharedWriter,
    prompt_path: &Path,
    log_path: &Path,
) -> Result<(String, capability::Capability, Launch), SpawnReport> {
    if let Some(cause) = &job.unwritten {
        return Err(halted(writer, job, cause.clone()));
    }
    let wake = wake_draft(job, prompt_path, log_path);
    let opened = capability::open_turn(job.session.path(), &mut lock(writer), wake);
    let (wake_id, capability) = match opened {
        Ok((event, capability)) => (event.id, capability),
        Err(err) if err.is_storage() => return Err(halted(writer, job, err.to_string())),
        Err(err) => {
            let why = format!("cannot write agent.wake: {err}");
            return Err(fail(writer, job, "dispatch_failed", &why, None));
        }
    };
    let launched = launch(job, prompt_path, log_path, capability.token());
    let failed = match (&job.prompt, launched) {
        (Ok(_), Ok(launch)) => return Ok((wake_id, capability, launch)),
        (Err(why), _) => fail(writer, job, "prompt_failed", why, None),
        (Ok(_), Err(LaunchError::Unwritten(why))) => halted(writer, job, why),
        (Ok(_), Err(LaunchError::Unlaunchable(why))) => {
            fail(writer, job, "missing_binary", &why, None)
        }
    };
    capability.revoke();
    Err(failed)
}

/// Whether `program` can be started: a path is left to the spawn, a bare name must be an
/// executable on `PATH`.
fn locate(program: &std::ffi::OsStr) -> Result<(), LaunchError> {
    use std::os::unix::fs::PermissionsExt as _;
    if program.as_encoded_bytes().contains(&b'/') {
        return Ok(());
    }
    let executable = |path: PathBuf| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(dir.join(program))));
    if found {
        Ok(())
    } else {
        Err(LaunchError::Unlaunchable(format!(
            "missing binary {}",
            program.to_string_lossy()
        )))
    }
}

/// What a turn runs: its process, its adapter, and the notes of what the adapter changed.
type Launch = (SpawnSpec, AdapterKind, Vec<String>);

/// What the adapter changed about the request (an effort level its CLI lacks), as `note`s.
fn write_notes(writer: &SharedWriter, job: &SpawnJob, notes: Vec<String>) {
    for note in notes {
        let mut data = Map::new();
        data.insert("role".into(), json!(job.role.id));
        data.insert("adapter".into(), json!(job.binding.adapter));
        let draft = Draft::new("system", Kind::Note).body(note).data(data);
        let _ = append(writer, draft.metadata(runner_metadata(&job.effect.id)));
    }
}

/// The `error` of a failed turn: the class, whether a retry could help, the CLI's own words
/// and the fix.
fn write_failure(
    writer: &SharedWriter,
    job: &SpawnJob,
    reason: &str,
    failure: &crate::adapters::TurnFailure,
    finished: &process::SpawnReport,
) {
    let role = &job.role.id;
    let n = job.effect.attempt + 1;
    let message = format!("{}: {}", job.binding.adapter, failure.message);
    let mut data = error_data(job, reason, &message);
    let exit_code = match finished.outcome {
        Outcome::Exited { code } => Some(code),
        _ => None,
    };
    data.insert("exit_code".into(), json!(exit_code));
    if let Outcome::Signaled { signal } = finished.outcome {
        data.insert("signal".into(), json!(signal));
    }
    match finished.outcome {
        Outcome::IdleTimeout => {
            data.insert("timeout_ms".into(), json!(idle_ms(job)));
        }
        Outcome::WallTimeout => {
            data.insert("timeout_ms".into(), json!(wall_ms(job)));
        }
        _ => {}
    }
    data.insert("class".into(), json!(failure.class));
    data.insert("retryable".into(), json!(failure.class.retryable()));
    if let Some(hint) = &failure.hint {
        data.insert("hint".into(), json!(hint));
    }
    data.insert(
        "stderr".into(),
        json!(tail_chars(&finished.stderr_tail, 2000)),
    );
    let hint = failure
        .hint
        .as_deref()
        .map(|hint| format!(" — {hint}"))
        .unwrap_or_default();
    let body = format!(
        "{role} turn {n} failed ({}): {message}{hint}",
        failure.class
    );
    let error = Draft::new("system", Kind::Error).body(body).data(data);
    let _ = append(writer, error.metadata(runner_metadata(&job.effect.id)));
}

/// The `agent.wake` that opens a turn: role, adapter, cause, where its prompt and log are.
fn wake_draft(job: &SpawnJob, prompt_path: &Path, log_path: &Path) -> Draft {
    let role = &job.role.id;
    let n = job.effect.attempt + 1;
    let relative = |p: &Path| {
        p.strip_prefix(job.session.path())
            .unwrap_or(p)
            .display()
            .to_string()
    };

    let mut data = Map::new();
    data.insert("role".into(), json!(role));
    data.insert("adapter".into(), json!(job.binding.adapter));
    data.insert("attempt".into(), json!(job.effect.attempt));
    data.insert("cause".into(), json!(job.effect.cause));
    data.insert("prompt".into(), json!(relative(prompt_path)));
    data.insert("log".into(), json!(relative(log_path)));
    if job.resumed {
        data.insert("resumed".into(), json!(true));
    }
    let mut metadata = runner_metadata(&job.effect.id);
    metadata.harness = Some(job.binding.harness.clone());
    metadata.provider = Some(job.binding.provider.clone());
    metadata.model.clone_from(&job.binding.model);
    metadata
        .consumed_intervene_ids
        .clone_from(&job.effect.consumed_intervene_ids);
    Draft::new(role.clone(), Kind::AgentWake)
        .body(format!("{role} turn {n} on {}", job.binding.adapter))
        .data(data)
        .metadata(metadata)
}

/// The `error` reason of a failed turn that ended this way (what the engine's effect contract
/// names; the class says why).
fn reason(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::MissingBinary { .. } | Outcome::SpawnError { .. } => "missing_binary",
        Outcome::IdleTimeout => "idle_timeout",
        Outcome::WallTimeout => "timeout",
        Outcome::Exited { code: 0 } => "no_produces",
        Outcome::Exited { .. }
        | Outcome::Signaled { .. }
        | Outcome::GaveUp
        | Outcome::Cancelled => "exit_nonzero",
    }
}

/// Write `error` + `agent.stop` for a spawn that never started.
fn fail(
    writer: &SharedWriter,
    job: &SpawnJob,
    reason: &str,
    message: &str,
    exit_code: Option<i32>,
) -> SpawnReport {
    let mut data = error_data(job, reason, message);
    data.insert("exit_code".into(), json!(exit_code));
    let error = Draft::new("system", Kind::Error)
        .body(format!("{} turn failed: {message}", job.role.id))
        .data(data)
        .metadata(runner_metadata(&job.effect.id));
    let _ = append(writer, error);
    write_stop(
        writer,
        job,
        "failed",
        exit_code,
        0,
        &TurnSummary::default(),
        0,
    );
    SpawnReport {
        role: job.role.id.clone(),
        effect_id: job.effect.id.clone(),
    }
}

fn error_data(job: &SpawnJob, reason: &str, message: &str) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("role".into(), json!(job.role.id));
    data.insert("reason".into(), json!(reason));
    data.insert("effect_id".into(), json!(job.effect.id));
    data.insert("adapter".into(), json!(job.binding.adapter));
    data.insert("message".into(), json!(message));
    data
}

fn write_stop(
    writer: &SharedWriter,
    job: &SpawnJob,
    outcome: &str,
    exit_code: Option<i32>,
    latency_ms: u64,
    summary: &TurnSummary,
    tool_calls_omitted: u64,
) {
    let mut usage = summary.usage.clone();
    let settled = crate::adapters::prices::settle(
        &mut usage,
        job.binding.model.as_deref(),
        job.config.prices.as_ref(),
    );
    let mut metadata = runner_metadata(&job.effect.id);
    metadata.latency_ms = Some(latency_ms);
    metadata
        .adapter_session_id
        .clone_from(&summary.adapter_session_id);
    metadata.harness = Some(job.binding.harness.clone());
    metadata.provider = Some(job.binding.provider.clone());
    metadata.model.clone_from(&job.binding.model);
    usage.write_to(&mut metadata);
    let mut data = Map::new();
    data.insert("outcome".into(), json!(outcome));
    data.insert("exit_code".into(), json!(exit_code));
    if tool_calls_omitted > 0 {
        data.insert("tool_calls_omitted".into(), json!(tool_calls_omitted));
    }
    if let Some(settled) = settled {
        data.insert("cost_source".into(), json!(settled.source.as_str()));
        if let Some(table) = settled.table {
            data.insert("price_table".into(), json!(table));
        }
    }
    let stop = Draft::new(job.role.id.clone(), Kind::AgentStop)
        .body(format!(
            "{} stopped ({outcome}, {latency_ms} ms)",
            job.role.id
        ))
        .data(data)
        .metadata(metadata);
    let _ = append(writer, stop);
}

fn idle_ms(job: &SpawnJob) -> u64 {
    job.config
        .idle_timeout_ms
        .unwrap_or(job.role.idle_timeout_ms)
}

fn wall_ms(job: &SpawnJob) -> u64 {
    job.config
        .wall_timeout_ms
        .unwrap_or(job.role.wall_timeout_ms)
}

/// Why a turn's process could not be launched.
enum LaunchError {
    /// The adapter cannot run it (no crumb binary, an unknown adapter, a bad invocation).
    Unlaunchable(String),
    /// A file the adapter needs could not be written (a full disk): the machine's fault.
    Unwritten(String),
}

impl From<String> for LaunchError {
    fn from(why: String) -> Self {
        LaunchError::Unlaunchable(why)
    }
}

/// The process to run for the job's adapter, built by the adapter itself (the one seam).
fn launch(
    job: &SpawnJob,
    prompt_path: &Path,
    log_path: &Path,
    capability: &str,
) -> Result<Launch, LaunchError> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot locate the crumb binary: {e}"))?;
    let adapter = adapter_kind(job)?;
    let session = &job.session;
    let request = TurnRequest {
        prompt: job.prompt.clone().unwrap_or_default(),
        prompt_file: prompt_path.to_path_buf(),
        session_dir: session.path().to_path_buf(),
        role: job.role.id.clone(),
        model: job.binding.model.clone(),
        effort: job.binding.effort(),
        command: job.binding.command.clone(),
        endpoint: job.binding.base_url.clone().map(|base_url| Endpoint {
            base_url,
            api_key: job
                .binding
                .api_key_env
                .as_deref()
                .and_then(|name| std::env::var(name).ok())
                .unwrap_or_else(|| "local".to_owned()),
        }),
    };
    let invocation = crate::adapters::invocation(adapter, &request)
        .map_err(|e| LaunchError::Unlaunchable(e.to_string()))?;
    let mut env = crumb_env(job, &exe, prompt_path);
    env.push((CAPABILITY_ENV.into(), capability.into()));
    env.extend(
        invocation
            .env
            .into_iter()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v)),
    );
    let notes = invocation.notes;
    for (path, content) in &invocation.files {
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, content))
            .map_err(|e| LaunchError::Unwritten(format!("cannot write {}: {e}", path.display())))?;
    }
    // Every agent runs under the turn shim, a child subreaper: nothing it starts outlives the
    // turn, even what left the group and cleared its environment. A program that is not there
    // is the turn's `missing_binary`, found here as the spawn would have found it.
    locate(&invocation.program)?;
    let mut args = vec![
        OsString::from("turn-shim"),
        OsString::from("--"),
        invocation.program,
    ];
    args.extend(invocation.args);
    let spec = SpawnSpec {
        program: exe.into_os_string(),
        args,
        cwd: session.path().to_path_buf(),
        env: env.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        env_remove: invocation.env_remove,
        stdin: invocation.stdin,
        log_path: log_path.to_path_buf(),
        wall_timeout: Duration::from_millis(wall_ms(job).max(1)),
        idle_timeout: Duration::from_millis(idle_ms(job).max(1)),
        kill_grace: KILL_GRACE,
        pgid_file: Some(pgid_file(log_path)),
    };
    Ok((spec, adapter, notes))
}

fn adapter_kind(job: &SpawnJob) -> Result<AdapterKind, String> {
    job.binding
        .adapter
        .parse()
        .map_err(|e: crate::adapters::UnknownAdapter| e.to_string())
}

/// The `CRUMB_*` environment of a turn, with the running `crumb` first on `PATH` so agents can
/// call `crumb event`.
fn crumb_env(job: &SpawnJob, exe: &Path, prompt_path: &Path) -> Vec<(String, OsString)> {
    let session = &job.session;
    let mut env: Vec<(String, OsString)> = vec![
        ("CRUMB_SESSION_DIR".into(), session.path().into()),
        ("CRUMB_SESSION_ID".into(), session.id().into()),
        ("CRUMB_ACTOR".into(), job.role.id.clone().into()),
        ("CRUMB_TRANSCRIPT_PATH".into(), session.transcript().into()),
        ("CRUMB_HARNESS".into(), job.binding.harness.clone().into()),
        ("CRUMB_PROVIDER".into(), job.binding.provider.clone().into()),
        (
            "CRUMB_MODEL".into(),
            job.binding.model.clone().unwrap_or_default().into(),
        ),
        ("CRUMB_PROMPT_PATH".into(), prompt_path.into()),
        (
            "CRUMB_CONSUMED_INTERVENE_IDS".into(),
            job.effect.consumed_intervene_ids.join(",").into(),
        ),
        (PRODUCES_ENV.into(), job.role.produces.join(",").into()),
        // Read only by the mock agent; set for every turn so no adapter is special-cased here.
        (
            SCENARIO_ENV.into(),
            job.config
                .mock_scenario
                .clone()
                .unwrap_or_else(|| "pass".into())
                .into(),
        ),
    ];
    // The absolute path is what the templates call: a login shell (codex runs `bash -lc`) may
    // reset `PATH`, but it keeps the other variables.
    env.push((CRUMB_BIN_ENV.into(), exe.into()));
    if let Some(dir) = exe.parent() {
        let mut path = OsString::from(dir);
        if let Some(existing) = std::env::var_os("PATH") {
            path.push(":");
            path.push(existing);
        }
        env.push(("PATH".into(), path));
    }
    env
}

/// Where a running spawn records its process group (next to its log).
pub(crate) fn pgid_file(log_path: &Path) -> PathBuf {
    log_path.with_extension("pgid")
}

/// Whether `role` emitted one of its `produces` kinds after the event `wake_id`.
pub(crate) fn produced_since(transcript: &Path, wake_id: &str, role: &RoleSpec) -> bool {
    let Ok((events, _)) = crate::transcript::reader::read_path(transcript) else {
        return false;
    };
    events
        .iter()
        .skip_while(|e| e.id != wake_id)
        .any(|e| e.from == role.id && role.produces.iter().any(|k| k == e.kind.as_str()))
}

fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

/// Run the pipeline's QA for `effect` and write `qa.result`. A retry (the engine's answer to a run
/// that could not run) first waits its backoff; cancelling the task cancels the wait too, and
/// `crumb resume` re-issues the retry, wait included.
pub(crate) async fn run_qa(
    effect: RunQa,
    qa: Option<QaSpec>,
    session: SessionDir,
    writer: SharedWriter,
    warm: crate::qa::runner::warm::WarmBrowser,
) {
    if effect.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(effect.delay_ms)).await;
    }
    let draft = match qa {
        None => failed_qa(
            "the pipeline declares no qa block, so nothing could verify the build",
            QaStatus::Fail,
            &effect,
        ),
        Some(spec) => {
            let parsed = crate::qa::predicate::parse(&Value::Array(effect.ac_predicates.clone()));
            let request = crate::qa::runner::QaRequest {
                artifacts_dir: session.artifacts(),
                out_dir: session.qa_dir(),
                report_base: session.path().to_path_buf(),
                label: effect.id.replace(':', "-"),
                predicates: parsed.predicates,
                predicate_problems: parsed.problems,
            };
            // The runner bounds itself (the wait for a browser slot excluded); past this,
            // something other than the artifact hung.
            let limit = Duration::from_millis(spec.timeout_ms)
                + QA_MARGIN
                + crate::qa::runner::pool::MAX_WAIT;
            // A browser started beside the build turn, if there is one (else QA starts its own).
            let run = crate::qa::runner::run_warm(&spec, &request, Some(warm));
            match tokio::time::timeout(limit, run).await {
                Ok(report) => report.to_draft(Some(&effect.build_event_id)),
                Err(_) => failed_qa(
                    &format!("QA did not finish within {} ms", limit.as_millis()),
                    QaStatus::Error,
                    &effect,
                ),
            }
        }
    };
    let mut draft = draft;
    if effect.attempt > 0
        && let Some(data) = draft.data.as_mut()
    {
        data.insert("attempt".into(), json!(effect.attempt));
    }
    let metadata = draft.metadata.get_or_insert_with(Metadata::default);
    metadata.effect_id = Some(effect.id.clone());
    // QA's evidence (screenshots) is the runner's own: kept by content, never refused by the cap.
    // Evidence that cannot be kept, or a QA that did not pass where the session cannot take a
    // write (its own report and screenshots may have failed the same way), is the machine's
    // fault: no result is written and the coordinator stops with the QA run still owed.
    let kept =
        crate::runtime::artifact_store::tree::keep(session.path(), &draft.artifacts, u64::MAX);
    let passed = draft
        .data
        .as_ref()
        .and_then(|data| data.get("status"))
        .and_then(Value::as_str)
        == Some("pass");
    let fault = match kept {
        Err(err) => Some(format!("cannot keep QA's evidence in the store: {err}")),
        Ok(_) if !passed => storage_short(session.path()),
        Ok(_) => None,
    };
    if let Some(cause) = fault {
        lock(&writer).halt(cause);
        return;
    }
    if let Err(err) = append(&writer, draft) {
        // The result must exist whatever happened; a minimal one cannot fail validation.
        eprintln!("crumb: cannot write qa.result: {err}");
        let _ = append(
            &writer,
            failed_qa(
                &format!("qa.result could not be written: {err}"),
                QaStatus::Error,
                &effect,
            ),
        );
    }
}

/// A `qa.result` for a run that produced no report: the pipeline has no checks (a failure), or
/// the run itself could not finish or be recorded (status `error`: the machine's fault).
fn failed_qa(message: &str, status: QaStatus, effect: &RunQa) -> Draft {
    let mut data = Map::new();
    let exit = if status == QaStatus::Error {
        EXIT_COULD_NOT_RUN
    } else {
        2
    };
    data.insert("exec_exit_code".into(), json!(exit));
    data.insert("status".into(), json!(status.as_str()));
    if status == QaStatus::Error {
        data.insert("error".into(), json!(message));
    }
    data.insert("findings".into(), json!([message]));
    data.insert("build_event_id".into(), json!(effect.build_event_id));
    let head = if status == QaStatus::Error {
        "qa ERROR (could not run)"
    } else {
        "qa FAIL"
    };
    Draft::new("system", Kind::QaResult)
        .body(format!("{head}: {message}"))
        .parent(effect.build_event_id.clone())
        .data(data)
        .metadata(runner_metadata(&effect.id))
}
