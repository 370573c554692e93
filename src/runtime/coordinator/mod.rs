//! The coordinator: one task per session that owns the engine state.
//!
//! On start it folds the whole transcript (replay), works out which effects have no outcome event
//! yet (every outcome carries `metadata.effect_id`) and issues exactly those — for a new session
//! that is the effects of `session.start` and `goal`; after a crash it is whatever was in flight.
//! Then it tails the transcript and the inbox and reduces events strictly in file order. Inbox
//! lines become `user.*` events carrying `data.inbox_offset`, so the consumed offset is derived
//! from the transcript and no line is applied twice. At most one spawn per role is live; more
//! wait in a per-role queue. Every ending writes `done` + `session.end`, an idle stall included;
//! waiting for a person is not an ending but a persisted state (`session.awaiting`, meta
//! `awaiting`), and neither is a shutdown: the caller's shutdown future stops live work without
//! recording an outcome, so `crumb resume` redoes exactly that work.
//!
//! The transcript is read and folded the way every other reader does (see [`Catchup`] and
//! `runtime::session_dir`), so the coordinator can never fold a file differently from `crumb
//! status` or Studio.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use std::sync::atomic::AtomicBool;

use tokio::sync::{mpsc, oneshot};

use super::dispatcher::{self, SharedWriter, SpawnJob, SpawnReport, append, runner_metadata};
use super::inbox::{parse_line, read_after, rejection_draft, to_draft};
use super::run_config::{Ending, RoleBinding, RunConfig};
use super::session_dir::SessionDir;
use crate::adapters::AdapterKind;
use crate::engine::effect::{Cancel, Done, Effect, Spawn};
use crate::engine::{Replay, State};
use crate::pipeline::table::TransitionTable;
use crate::process;
use crate::runtime::inbox::InboxError;
use crate::transcript::reader::Tolerant;
use crate::transcript::tail::Tail;
use crate::transcript::{Draft, Event, Kind};

mod catchup;
mod ending;
mod prompt_context;
mod storage_fault;

pub use catchup::Catchup;
use catchup::{fold_item, inbox_offset, poll};
use ending::LiveSpawn;
use prompt_context::{Latest, PromptFailure, render_prompt};
pub(crate) use storage_fault::{StorageFault, free_space};

/// How often the transcript and the inbox are polled.
const POLL: Duration = Duration::from_millis(10);
/// The poll interval once nothing happened for [`SLOW_AFTER_POLLS`] polls (a long agent turn, a
/// person who has not answered yet): cheaper, and still prompt for people.
const SLOW_POLL: Duration = Duration::from_millis(100);
const SLOW_AFTER_POLLS: u32 = 200;
/// How long live spawns get to finish on their own once the session is done. A turn whose
/// result has arrived is not cancelled even then: it ends on its own, bounded by its idle timeout.
const FINISH_GRACE: Duration = Duration::from_secs(3);
/// Quiet polls in a row before the session counts as idle.
const QUIET_POLLS: u32 = 3;

/// A session ready to be driven.
#[derive(Debug, Clone)]
pub struct Session {
    pub dir: SessionDir,
    pub table: Arc<TransitionTable>,
    pub config: Arc<RunConfig>,
}

/// Knobs of one drive.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Keep an awaiting session open for the person's answer instead of returning.
    pub wait: bool,
}

/// What the coordinator tells the person while it runs.
pub trait Observer {
    /// An event was folded (`live` is false during the initial replay).
    fn event(&mut self, _event: &Event, _state: &State, _live: bool) {}
    /// Something went wrong that does not stop the session.
    fn warn(&mut self, message: &str) {
        eprintln!("crumb: {message}");
    }
}

/// An observer that prints nothing but warnings.
pub struct Quiet;
impl Observer for Quiet {}

/// How a drive ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub ending: Ending,
    pub state: State,
}

/// Why the coordinator could not go on.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    #[error("cannot read the transcript {path}: {source}")]
    Transcript {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write the transcript: {0}")]
    Write(#[from] crate::transcript::writer::WriteError),
    /// A write failed (a full disk, a quota, an I/O error); see [`storage_fault`].
    #[error(transparent)]
    Storage(#[from] storage_fault::StorageFault),
}

enum TaskDone {
    Spawn(SpawnReport),
    Qa,
}

struct Coordinator<'o> {
    session: Session,
    pipeline_file: PathBuf,
    writer: SharedWriter,
    /// The fold of the transcript (the same [`Replay`] `crumb replay` folds with).
    replay: Replay,
    tail: Tail<Tolerant>,
    inbox_offset: u64,
    latest: Latest,
    /// Role → its live spawn.
    live: HashMap<String, LiveSpawn>,
    /// Spawn jobs not yet reported back (cancelled ones included).
    spawns_running: usize,
    queued: HashMap<String, VecDeque<(Spawn, bool)>>,
    qa_running: usize,
    tasks_tx: mpsc::UnboundedSender<TaskDone>,
    tasks: mpsc::UnboundedReceiver<TaskDone>,
    finishing: Option<(Done, Instant)>,
    /// Set when the caller's shutdown fires: live turns are stopped without recording an outcome.
    shutdown: Arc<AtomicBool>,
    /// QA runs in flight (aborted on shutdown; their browser dies with them).
    qa_tasks: Vec<tokio::task::JoinHandle<()>>,
    /// A browser started beside the turn whose result runs QA; killed when dropped.
    warm: crate::qa::runner::warm::WarmBrowser,
    observer: &'o mut dyn Observer,
    options: Options,
}

/// Drive `session` until it ends, waits for a person, or `shutdown` completes. On shutdown nothing
/// more is spawned, live turns and QA runs are stopped without recording an outcome (so the session
/// stays resumable exactly where it was), and the ending is [`Ending::Interrupted`]. The caller
/// decides what shuts it down (the CLI passes Ctrl-C and SIGTERM; tests pass a channel).
pub async fn drive(
    session: Session,
    options: Options,
    observer: &mut dyn Observer,
    shutdown: impl Future<Output = ()>,
) -> Result<Outcome, CoordinatorError> {
    // The caller holds the session's lock: any group still recorded is a dead coordinator's.
    super::orphans::reap(&session.dir);
    // No earlier turn is live: a token of a killed run must never work again.
    super::capability::revoke_all(session.dir.path());
    let writer =
        crate::transcript::writer::Writer::open(session.dir.transcript(), session.dir.id())?
            .halting();
    let (tasks_tx, tasks) = mpsc::unbounded_channel();
    let pipeline_file = session.dir.path().join(&session.config.pipeline_file);
    let catchup = Catchup::read(&session.dir, &session.table, observer)?;
    let transcript = session.dir.transcript();
    let table = Arc::clone(&session.table);
    let mut coordinator = Coordinator {
        session,
        pipeline_file,
        writer: Arc::new(std::sync::Mutex::new(writer)),
        replay: catchup.replay,
        tail: catchup.tail,
        inbox_offset: catchup.inbox_offset,
        latest: catchup.latest,
        live: HashMap::new(),
        spawns_running: 0,
        queued: HashMap::new(),
        qa_running: 0,
        tasks_tx,
        tasks,
        finishing: None,
        shutdown: Arc::new(AtomicBool::new(false)),
        qa_tasks: Vec::new(),
        warm: crate::qa::runner::warm::WarmBrowser::default(),
        observer,
        options,
    };
    if catchup.unended {
        coordinator.complete_end();
    }
    coordinator.reissue(catchup.issued, &catchup.outcomes);
    let outcome = Box::pin(coordinator.run(shutdown)).await?;
    // A long session's next `crumb status` reads only what is appended after this (not after
    // Ctrl-C: whoever interrupts wants the prompt back now).
    if !matches!(outcome.ending, Ending::Interrupted) {
        let events = outcome.state.events;
        let _ = tokio::task::spawn_blocking(move || {
            super::status_fold::refresh_if_long(&transcript, &table, events);
        })
        .await;
    }
    Ok(outcome)
}

impl Coordinator<'_> {
    /// A runner died between `done` and `session.end`: write the missing `session.end`, so the
    /// transcript says the session is over and the exit code follows the recorded outcome.
    fn complete_end(&mut self) {
        let Some(done) = self.replay.state.done.clone() else {
            return;
        };
        self.append_or_warn(
            Draft::new("system", Kind::SessionEnd)
                .body(format!(
                    "session ended: {} (completed on resume)",
                    done.reason
                ))
                .metadata(runner_metadata(&done.event_id)),
        );
    }

    /// Re-issue the effects of the initial fold that have no outcome.
    fn reissue(&mut self, issued: Vec<Effect>, outcomes: &catchup::Outcomes) {
        for effect in issued {
            let id = effect.id().to_owned();
            let settled = match &effect {
                Effect::Spawn(spawn) => self.settle_turn(spawn, outcomes),
                _ => outcomes.completed.contains(&id),
            };
            if settled || (self.replay.state.done.is_some() && effect.starts_work()) {
                continue;
            }
            self.dispatch(effect, outcomes.woken.contains_key(&id));
        }
    }

    /// Whether the turn of `spawn` needs nothing more: it was closed (`agent.stop`), or it was cut
    /// short by the crash and is closed now (its orphan stopped) because it produced its result
    /// or failed (what follows a failure is an effect of its own). Its other events, such as the
    /// adapter's `note`s about the request, say nothing about how the turn went: such a turn is
    /// redone. Turns are closed even when the session has ended since.
    fn settle_turn(&mut self, spawn: &Spawn, outcomes: &catchup::Outcomes) -> bool {
        if outcomes.stopped.contains(&spawn.id) {
            return true;
        }
        let Some(woken) = outcomes.woken.get(&spawn.id) else {
            // A turn that failed before it could start (no wake) is settled by its error.
            return outcomes.failed.contains(&spawn.id);
        };
        self.recover_interrupted(spawn, woken) || outcomes.failed.contains(&spawn.id)
    }

    /// A spawn whose coordinator died mid-turn: stop its orphan, then close it if the role already
    /// produced what it was asked for (true), or let it be re-issued (false).
    fn recover_interrupted(&mut self, spawn: &Spawn, woken: &catchup::Woken) -> bool {
        if let Some(log) = &woken.log {
            let pgid = dispatcher::pgid_file(&self.session.dir.path().join(log));
            process::kill_orphan(&pgid, self.session.dir.id());
        }
        let Some(role) = self.session.table.role(&spawn.role) else {
            return false;
        };
        let transcript = self.session.dir.transcript();
        if !dispatcher::produced_since(&transcript, &woken.wake_id, role) {
            return false;
        }
        let mut data = Map::new();
        data.insert("outcome".into(), json!("recovered"));
        data.insert("exit_code".into(), Value::Null);
        let stop = Draft::new(spawn.role.clone(), Kind::AgentStop)
            .body(format!(
                "{} stopped (its coordinator died after the turn produced its result)",
                spawn.role
            ))
            .data(data)
            .metadata(runner_metadata(&spawn.id));
        self.append_or_warn(stop);
        true
    }

    async fn run(
        mut self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Outcome, CoordinatorError> {
        let mut quiet = 0u32;
        let mut silent = 0u32;
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            if let Some(error) = storage_fault::of(&self.writer, &self.session.dir) {
                self.stop_now().await;
                return Err(error.into());
            }
            let batch = poll(&mut self.tail, &self.session.dir, self.observer)?;
            let mut progressed = batch.more;
            for (line, item) in batch.lines.into_iter().zip(batch.items) {
                progressed = true;
                self.fold(line, item);
            }
            while let Ok(done) = self.tasks.try_recv() {
                progressed = true;
                self.complete(done);
            }
            if self.finishing.is_none() && self.replay.state.done.is_none() {
                progressed |= self.read_inbox();
            }
            if let Some(ending) = self.finish_if_ready().await? {
                return Ok(Outcome {
                    ending,
                    state: self.replay.state,
                });
            }
            silent = if progressed {
                0
            } else {
                silent.saturating_add(1)
            };
            let pause = if silent > SLOW_AFTER_POLLS {
                SLOW_POLL
            } else {
                POLL
            };
            quiet = if progressed || !self.is_quiet() {
                0
            } else {
                quiet + 1
            };
            if quiet >= QUIET_POLLS {
                if let Some(done) = &self.replay.state.done {
                    // Ended by an event someone else wrote (or ended before this run).
                    return Ok(Outcome {
                        ending: Ending::Done {
                            outcome: done.outcome,
                            reason: done.reason.clone(),
                        },
                        state: self.replay.state,
                    });
                }
                if self.replay.state.awaiting.is_some() {
                    if !self.options.wait {
                        return Ok(Outcome {
                            ending: Ending::Awaiting,
                            state: self.replay.state,
                        });
                    }
                } else if !self.is_paused() {
                    self.stall();
                }
                quiet = 0;
            }
            tokio::select! {
                done = self.tasks.recv() => if let Some(done) = done { self.complete(done) },
                () = tokio::time::sleep(pause) => {}
                () = &mut shutdown => return Ok(self.stop_now().await),
            }
        }
    }

    /// Fold one line the tail read and run the effects it asks for.
    fn fold(
        &mut self,
        line: u64,
        item: Result<crate::engine::replay::Parsed, crate::transcript::reader::LineIssue>,
    ) {
        let table = Arc::clone(&self.session.table);
        let Some((event, effects)) = fold_item(&mut self.replay, &table, line, item, self.observer)
        else {
            return;
        };
        self.latest.note(&event, &table);
        self.inbox_offset = self.inbox_offset.max(inbox_offset(&event));
        self.observer.event(&event, &self.replay.state, true);
        for effect in effects {
            self.dispatch(effect, false);
        }
    }

    fn dispatch(&mut self, effect: Effect, resumed: bool) {
        match effect {
            Effect::Append(append) => self.append_or_warn(*append.draft),
            Effect::Spawn(spawn) => {
                if self.finishing.is_some() {
                    return;
                }
                if self.live.contains_key(&spawn.role) {
                    self.queued
                        .entry(spawn.role.clone())
                        .or_default()
                        .push_back((spawn, resumed));
                } else {
                    self.start_spawn(spawn, resumed);
                }
            }
            Effect::RunQa(run) => {
                if self.finishing.is_some() {
                    return;
                }
                self.qa_running += 1;
                let qa = self.session.table.qa.clone();
                let dir = self.session.dir.clone();
                let writer = self.writer.clone();
                let tx = self.tasks_tx.clone();
                let warm = self.warm.clone();
                self.qa_tasks.retain(|task| !task.is_finished());
                self.qa_tasks.push(tokio::spawn(async move {
                    dispatcher::run_qa(run, qa, dir, writer, warm).await;
                    let _ = tx.send(TaskDone::Qa);
                }));
            }
            Effect::Done(done) => {
                self.queued.clear();
                // No QA after the end: a browser started for one goes now.
                self.warm.discard();
                if self.finishing.is_none() {
                    self.finishing = Some((done, Instant::now() + FINISH_GRACE));
                }
            }
            Effect::Cancel(cancel) => self.cancel(&cancel),
        }
    }

    fn start_spawn(&mut self, spawn: Spawn, resumed: bool) {
        let Some(role) = self.session.table.role(&spawn.role).cloned() else {
            self.observer
                .warn(&format!("spawn of unknown role `{}` ignored", spawn.role));
            return;
        };
        let binding = self.binding_for(&spawn);
        if crate::qa::runner::warm::turn_runs_qa(&self.session.table, &role) {
            // Its result runs QA: start the browser now, hidden behind the turn.
            self.warm.start(self.session.dir.qa_dir());
        }
        let (prompt, unwritten) = match render_prompt(
            &self.session,
            &self.pipeline_file,
            &self.replay.state,
            &self.latest,
            &spawn,
            &role,
        ) {
            Ok(text) => (Ok(text), None),
            Err(PromptFailure::Render(why)) => (Err(why), None),
            Err(PromptFailure::Write(why)) => (Err(why.clone()), Some(why)),
        };
        let job = SpawnJob {
            effect: spawn,
            role,
            binding,
            prompt,
            unwritten,
            session: self.session.dir.clone(),
            config: self.session.config.clone(),
            resumed,
            shutdown: self.shutdown.clone(),
            result_seen: Arc::new(AtomicBool::new(false)),
        };
        let (cancel_tx, cancel_rx) = oneshot::channel();
        self.live.insert(
            job.role.id.clone(),
            LiveSpawn {
                effect_id: job.effect.id.clone(),
                cancel: cancel_tx,
                result_seen: Arc::clone(&job.result_seen),
            },
        );
        self.spawns_running += 1;
        let writer = self.writer.clone();
        let tx = self.tasks_tx.clone();
        tokio::spawn(async move {
            let report = dispatcher::run_spawn(job, writer, cancel_rx).await;
            let _ = tx.send(TaskDone::Spawn(report));
        });
    }

    /// The role's binding, with the effect's adapter override (a `/swap` or a circuit swap).
    fn binding_for(&self, spawn: &Spawn) -> RoleBinding {
        let bound = self
            .session
            .config
            .bindings
            .get(&spawn.role)
            .cloned()
            .unwrap_or_else(|| RoleBinding::to_adapter(AdapterKind::FALLBACK, "default"));
        match spawn.adapter.as_deref().map(str::parse::<AdapterKind>) {
            Some(Ok(kind)) if kind.as_str() != bound.adapter => {
                let mut swapped = RoleBinding::to_adapter(kind, "swap");
                if kind.adapter().runs_argv() {
                    // A swap to `command` runs the program the pipeline declares for the role.
                    let declared = self
                        .session
                        .table
                        .role(&spawn.role)
                        .and_then(|r| r.adapter.as_ref());
                    let dir = self
                        .pipeline_file
                        .parent()
                        .unwrap_or(std::path::Path::new("."));
                    swapped.command = declared.map_or_else(Vec::new, |adapter| {
                        crate::pipeline::argv::resolve(adapter.command(), dir)
                    });
                }
                swapped
            }
            _ => bound,
        }
    }

    fn complete(&mut self, done: TaskDone) {
        match done {
            TaskDone::Qa => self.qa_running = self.qa_running.saturating_sub(1),
            TaskDone::Spawn(report) => {
                self.spawns_running = self.spawns_running.saturating_sub(1);
                if self
                    .live
                    .get(&report.role)
                    .is_some_and(|live| live.effect_id == report.effect_id)
                {
                    self.live.remove(&report.role);
                }
                let next = self
                    .queued
                    .get_mut(&report.role)
                    .and_then(VecDeque::pop_front);
                if let Some((spawn, resumed)) = next
                    && self.finishing.is_none()
                {
                    self.start_spawn(spawn, resumed);
                }
            }
        }
    }

    fn cancel(&mut self, cancel: &Cancel) {
        let roles: Vec<String> = match &cancel.role {
            Some(role) => self.live.keys().filter(|r| *r == role).cloned().collect(),
            None => self.live.keys().cloned().collect(),
        };
        for role in &roles {
            if let Some(live) = self.live.remove(role) {
                // The job still writes its `agent.stop`; its slot is free from now on.
                let _ = live.cancel.send(());
            }
        }
        match &cancel.role {
            Some(role) => {
                self.queued.remove(role);
            }
            None => self.queued.clear(),
        }
        let mut data = Map::new();
        data.insert("cancelled".into(), json!(roles));
        data.insert("reason".into(), json!(cancel.reason));
        let body = if roles.is_empty() {
            format!("cancel: no live spawn matched ({})", cancel.reason)
        } else {
            format!("cancel: stopped {} ({})", roles.join(", "), cancel.reason)
        };
        self.append_or_warn(
            Draft::new("system", Kind::Note)
                .body(body)
                .data(data)
                .metadata(runner_metadata(&cancel.id)),
        );
    }

    /// Turn new inbox lines into `user.*` events (or error acks). True when any line was read.
    fn read_inbox(&mut self) -> bool {
        let lines = match read_after(&self.session.dir.inbox(), self.inbox_offset) {
            Ok(lines) => lines,
            Err(err) => {
                self.observer.warn(&err.to_string());
                return false;
            }
        };
        let roles: Vec<String> = self
            .session
            .table
            .roles
            .iter()
            .map(|r| r.id.clone())
            .collect();
        let read = !lines.is_empty();
        for line in lines {
            let draft = if line.too_long {
                Some(rejection_draft(
                    &InboxError::TooLong {
                        len: usize::try_from(line.end - line.start).unwrap_or(usize::MAX),
                    },
                    "",
                    line.end,
                ))
            } else {
                match parse_line(&line.text, &roles) {
                    Ok(Some(command)) => Some(to_draft(&command, Some(line.end))),
                    Ok(None) => None,
                    Err(error) => Some(rejection_draft(&error, &line.text, line.end)),
                }
            };
            if let Some(draft) = draft {
                self.append_or_warn(draft);
            }
            self.inbox_offset = line.end;
        }
        read
    }

    /// Nothing runs, nothing is queued, nothing is being finished.
    fn is_quiet(&self) -> bool {
        self.spawns_running == 0
            && self.qa_running == 0
            && self.queued.values().all(VecDeque::is_empty)
            && self.finishing.is_none()
    }

    fn is_paused(&self) -> bool {
        self.replay.state.paused
            || self
                .replay
                .state
                .roles
                .values()
                .any(|r| r.paused || r.queued.is_some())
    }

    fn append_or_warn(&mut self, draft: Draft) {
        if let Err(err) = append(&self.writer, draft) {
            self.observer
                .warn(&format!("could not append an event: {err}"));
        }
    }
}
