//! Running one agent process: its own process group, the prompt on stdin, stdout and stderr
//! streamed line by line to a log file and to a callback, wall and idle timeouts that take down
//! the whole group (SIGTERM, a grace period, SIGKILL), and a typed outcome.
//!
//! Everything the process leaves behind is stopped too: when the leader exits, stragglers in its
//! group get the same SIGTERM → SIGKILL treatment, so no tool subprocess outlives its turn.
//! While it runs, its process-group id can be recorded in a file ([`SpawnSpec::pgid_file`]) so a
//! coordinator resumed after a crash can stop the orphan ([`kill_orphan`]). The record is on disk
//! before the process starts: the group is founded by a holder first ([`recorded_group`]), so no instant
//! of the turn runs unrecorded.

pub(crate) mod agent_env;
pub(crate) mod command;
pub(crate) mod group;
mod lines;
pub mod reap;
pub(crate) mod recorded_group;
pub(crate) mod subreaper;

use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

pub use agent_env::AgentEnv;
use lines::LineSplitter;

/// How long stdout/stderr are drained after the process group is gone (something that escaped
/// the group may still hold a pipe open; we stop waiting for it).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// What to run and how.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// Executable: a path, or a name looked up on the `PATH` of `env`.
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Working directory (must exist).
    pub cwd: PathBuf,
    /// Variables set for the child, on top of the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Inherited variables removed from the child's environment (e.g. `CLAUDECODE`).
    pub env_remove: Vec<OsString>,
    /// Bytes written to stdin, which is then closed. `None`: stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Log file receiving a header, every output line (stderr lines prefixed) and a footer.
    pub log_path: PathBuf,
    /// Longest the process may run.
    pub wall_timeout: Duration,
    /// Longest the process may stay silent on both stdout and stderr.
    pub idle_timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Where the process-group id is recorded while the process runs (removed when it ends), so
    /// a resumed coordinator can stop an orphan of a coordinator that was killed.
    pub pgid_file: Option<PathBuf>,
}

/// How much of the end of stdout a report keeps (for usage and end-of-turn parsing).
pub(crate) const STDOUT_TAIL_BYTES: usize = 256 * 1024;
/// How much of the end of stderr a report keeps (for error events).
pub(crate) const STDERR_TAIL_BYTES: usize = 4 * 1024;

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How the caller judges one output line (see [`run_watched`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineFlow {
    /// Work happened: the idle deadline starts over.
    #[default]
    Progress,
    /// Retry chatter ("reconnecting…", "retrying in 4 s"): output, but not progress, so it does
    /// not hold off the idle timeout.
    Chatter,
    /// The line settles the turn as lost (a rejected key the CLI would retry for minutes): the
    /// group is stopped now and the outcome is [`Outcome::GaveUp`].
    GiveUp,
}

/// How a spawn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The process exited by itself with this status (an exit status above 128 is still an
    /// exit: Gemini exits with an HTTP status mod 256).
    Exited { code: i32 },
    /// The OS reports the process was killed by this signal.
    Signaled { signal: i32 },
    /// Stopped because an output line showed the turn could not succeed ([`LineFlow::GiveUp`]).
    GaveUp,
    /// Killed after running longer than the wall timeout.
    WallTimeout,
    /// Killed after staying silent longer than the idle timeout.
    IdleTimeout,
    /// Killed because the caller cancelled it (`/cancel`, session end).
    Cancelled,
    /// The executable does not exist.
    MissingBinary { program: String },
    /// The process could not be started (permissions, argv too long, missing working directory…).
    SpawnError { message: String },
}

impl Outcome {
    /// A clean exit with status 0.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Exited { code: 0 })
    }
}

/// What happened during a spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnReport {
    pub outcome: Outcome,
    /// From spawn to the end of the outcome (before draining leftovers).
    pub duration: Duration,
    /// Time to the first byte on stdout or stderr.
    pub first_output: Option<Duration>,
    pub stdout_lines: u64,
    pub stderr_lines: u64,
    /// The process group id used (the leader's pid), for tests and diagnostics.
    pub pgid: Option<i32>,
    /// The last [`STDOUT_TAIL_BYTES`] of stdout, whole lines joined by `\n`.
    pub stdout_tail: Vec<u8>,
    /// The last [`STDERR_TAIL_BYTES`] of stderr, whole lines joined by `\n`, lossily decoded.
    pub stderr_tail: String,
    /// Why the log could not be opened or written, if it could not (a full disk): the caller
    /// decides whether that is the machine's fault rather than the turn's.
    pub log_fault: Option<String>,
}

enum Message {
    Activity,
    Line(Stream, Vec<u8>),
}

/// Run `spec` to its end. `on_line` sees every complete output line, in arrival order;
/// `cancel` completing stops the process like a timeout would (pass `std::future::pending()`
/// when there is nothing to cancel on). Every line counts as progress.
pub async fn run(
    spec: SpawnSpec,
    mut on_line: impl FnMut(Stream, &str) + Send,
    cancel: impl Future<Output = ()>,
) -> SpawnReport {
    run_watched(
        spec,
        move |stream, line| {
            on_line(stream, line);
            LineFlow::Progress
        },
        cancel,
    )
    .await
}

/// [`run`], with `on_line` judging each line: only progress holds off the idle timeout, and a
/// line that settles the turn as lost stops the group at once.
pub async fn run_watched(
    spec: SpawnSpec,
    on_line: impl FnMut(Stream, &str) -> LineFlow + Send,
    cancel: impl Future<Output = ()>,
) -> SpawnReport {
    let started = Instant::now();
    let failed = |outcome| SpawnReport::not_started(outcome, started);
    let mut log = match open_log(&spec).await {
        Ok(file) => Log { file, fault: None },
        Err(err) => {
            let message = format!("cannot open log {}: {err}", spec.log_path.display());
            let mut report = failed(Outcome::SpawnError {
                message: message.clone(),
            });
            report.log_fault = Some(message);
            return report;
        }
    };
    let (started_child, group_id) = start_recorded(&spec).await;
    let mut child = match started_child {
        Ok(child) => child,
        Err(outcome) => {
            log.write(format!("=== not started: {} ===\n", describe(&outcome)).as_bytes())
                .await;
            let mut report = failed(outcome);
            report.log_fault = log.fault;
            return report;
        }
    };
    let pgid = group_id.or_else(|| child.id().and_then(|id| i32::try_from(id).ok()));
    if let (Some(input), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // Written on its own task so a child that never reads cannot block us; closing it is
        // what tells the agent CLI the prompt is complete.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
    let (mut receiver, readers) = read_output(&mut child);

    let mut collector = Collector {
        on_line,
        started,
        first_output: None,
        counts: (0, 0),
        pending: Vec::new(),
        stdout_tail: Vec::new(),
        stderr_tail: Vec::new(),
    };
    let outcome = supervise(
        &spec,
        &mut child,
        &mut receiver,
        &mut collector,
        &mut log,
        cancel,
    )
    .await;
    let duration = started.elapsed();
    // Stop the group: the whole of it on a timeout or cancel, the stragglers after a clean exit.
    if let Some(pgid) = pgid {
        terminate_group(pgid, spec.kill_grace, &mut child).await;
    }
    // Drain what is left in the pipes, bounded.
    let drain = async {
        while let Some(message) = receiver.recv().await {
            collector.handle(message);
        }
    };
    let drained = tokio::time::timeout(DRAIN_LIMIT, drain).await.is_ok();
    for reader in readers {
        reader.abort();
    }
    log.write(&collector.pending).await;
    if let Some(file) = &spec.pgid_file {
        let _ = std::fs::remove_file(file);
    }
    let footer = format!(
        "=== {}, {} ms{} ===\n",
        describe(&outcome),
        duration.as_millis(),
        if drained {
            ""
        } else {
            ", output still open after the group was stopped"
        }
    );
    log.write(footer.as_bytes()).await;
    if let Err(err) = log.file.flush().await {
        log.fault.get_or_insert_with(|| err.to_string());
    }
    SpawnReport {
        outcome,
        duration,
        first_output: collector.first_output,
        stdout_lines: collector.counts.0,
        stderr_lines: collector.counts.1,
        pgid,
        stdout_tail: collector.stdout_tail,
        stderr_tail: String::from_utf8_lossy(&collector.stderr_tail).into_owned(),
        log_fault: log
            .fault
            .map(|e| format!("cannot write log {}: {e}", spec.log_path.display())),
    }
}

impl SpawnReport {
    /// The report of a process that never ran.
    fn not_started(outcome: Outcome, started: Instant) -> Self {
        SpawnReport {
            outcome,
            duration: started.elapsed(),
            first_output: None,
            stdout_lines: 0,
            stderr_lines: 0,
            pgid: None,
            stdout_tail: Vec::new(),
            stderr_tail: String::new(),
            log_fault: None,
        }
    }
}

/// Pump the child's stdout and stderr into one channel of activity and lines.
fn read_output(
    child: &mut tokio::process::Child,
) -> (mpsc::Receiver<Message>, Vec<tokio::task::JoinHandle<()>>) {
    let (sender, receiver) = mpsc::channel::<Message>(256);
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, Stream::Stdout, sender.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, Stream::Stderr, sender.clone())));
    }
    (receiver, readers)
}

/// Start the child; with a [`SpawnSpec::pgid_file`], in a group recorded there before it starts
/// (the record is removed again if it cannot start). Also returns the recorded group id.
async fn start_recorded(spec: &SpawnSpec) -> (Result<tokio::process::Child, Outcome>, Option<i32>) {
    let Some(file) = &spec.pgid_file else {
        return (start(spec, None), None);
    };
    let Ok(held) = recorded_group::HeldGroup::found(file, "", &spec.env) else {
        // No holder could be started: record the group right after the start, as before.
        let child = start(spec, None);
        if let Ok(child) = &child
            && let Some(pgid) = child.id()
        {
            let _ = std::fs::write(file, format!("{pgid}\n"));
        }
        return (child, None);
    };
    let pgid = held.pgid();
    let child = start(spec, Some(pgid));
    held.release().await;
    if child.is_err() {
        let _ = std::fs::remove_file(file);
    }
    (child, Some(pgid))
}

/// Start the child in the recorded group `join`, or else in a group of its own.
fn start(spec: &SpawnSpec, join: Option<i32>) -> Result<tokio::process::Child, Outcome> {
    if !spec.cwd.is_dir() {
        return Err(Outcome::SpawnError {
            message: format!("working directory {} does not exist", spec.cwd.display()),
        });
    }
    let mut command = command::spawned(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .process_group(join.unwrap_or(0))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for name in &spec.env_remove {
        command.env_remove(name);
    }
    command.envs(spec.env.iter().map(|(k, v)| (k, v)));
    command.spawn().map_err(|err| {
        let program = spec.program.to_string_lossy().into_owned();
        if err.kind() == std::io::ErrorKind::NotFound {
            Outcome::MissingBinary { program }
        } else {
            Outcome::SpawnError {
                message: format!("cannot start {program}: {err}"),
            }
        }
    })
}

/// Wait for the child to exit, a deadline, or `cancel`, handling output meanwhile.
async fn supervise<F: FnMut(Stream, &str) -> LineFlow>(
    spec: &SpawnSpec,
    child: &mut tokio::process::Child,
    receiver: &mut mpsc::Receiver<Message>,
    collector: &mut Collector<F>,
    log: &mut Log,
    cancel: impl Future<Output = ()>,
) -> Outcome {
    let wall_deadline = tokio::time::Instant::now() + spec.wall_timeout;
    let mut idle_deadline = tokio::time::Instant::now() + spec.idle_timeout;
    let mut streams_open = true;
    tokio::pin!(cancel);
    loop {
        tokio::select! {
            biased;
            status = child.wait() => {
                return match status {
                    Ok(status) => exit_outcome(status),
                    Err(err) => Outcome::SpawnError { message: format!("cannot wait for the process: {err}") },
                };
            }
            message = receiver.recv(), if streams_open => match message {
                Some(message) => match collector.handle(message) {
                    Some(LineFlow::Progress) => {
                        idle_deadline = tokio::time::Instant::now() + spec.idle_timeout;
                    }
                    Some(LineFlow::GiveUp) => return Outcome::GaveUp,
                    Some(LineFlow::Chatter) | None => {}
                },
                None => streams_open = false,
            },
            () = tokio::time::sleep_until(idle_deadline) => return Outcome::IdleTimeout,
            () = tokio::time::sleep_until(wall_deadline) => return Outcome::WallTimeout,
            () = &mut cancel => return Outcome::Cancelled,
        }
        if (receiver.is_empty() || collector.pending.len() > 64 * 1024)
            && !collector.pending.is_empty()
        {
            log.write(&collector.pending).await;
            collector.pending.clear();
        }
    }
}

/// Output bookkeeping: line counts, first activity, the log buffer and the caller's callback.
struct Collector<F> {
    on_line: F,
    started: Instant,
    first_output: Option<Duration>,
    counts: (u64, u64),
    /// Log bytes not yet written.
    pending: Vec<u8>,
    stdout_tail: Vec<u8>,
    stderr_tail: Vec<u8>,
}

impl<F: FnMut(Stream, &str) -> LineFlow> Collector<F> {
    /// Record `message`; a line returns the caller's judgement of it.
    fn handle(&mut self, message: Message) -> Option<LineFlow> {
        match message {
            Message::Activity => {
                self.first_output
                    .get_or_insert_with(|| self.started.elapsed());
                None
            }
            Message::Line(stream, bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                match stream {
                    Stream::Stdout => {
                        self.counts.0 += 1;
                        keep_tail(&mut self.stdout_tail, &bytes, STDOUT_TAIL_BYTES);
                    }
                    Stream::Stderr => {
                        self.counts.1 += 1;
                        keep_tail(&mut self.stderr_tail, &bytes, STDERR_TAIL_BYTES);
                        self.pending.extend_from_slice(b"[stderr] ");
                    }
                }
                self.pending.extend_from_slice(text.as_bytes());
                self.pending.push(b'\n');
                Some((self.on_line)(stream, &text))
            }
        }
    }
}

/// Append `line` (and a newline) to `tail`, keeping only its last `limit` bytes.
fn keep_tail(tail: &mut Vec<u8>, line: &[u8], limit: usize) {
    tail.extend_from_slice(line);
    tail.push(b'\n');
    if tail.len() > limit {
        let cut = tail.len() - limit;
        tail.drain(..cut);
    }
}

/// Kill a process group left by a coordinator that died, if it still runs crumb work for
/// `session_id` (checked through `/proc`, so a reused id is never hit). Returns whether it did.
pub fn kill_orphan(pgid_file: &std::path::Path, session_id: &str) -> bool {
    recorded_group::reap_recorded(pgid_file, &format!("CRUMB_SESSION_ID={session_id}"))
}

/// Read a pipe, announcing activity on every chunk and sending every complete line.
async fn pump(
    mut pipe: impl tokio::io::AsyncRead + Unpin,
    stream: Stream,
    sender: mpsc::Sender<Message>,
) {
    let mut splitter = LineSplitter::default();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if sender.send(Message::Activity).await.is_err() {
            return;
        }
        for line in splitter.push(&buffer[..read]) {
            if sender.send(Message::Line(stream, line)).await.is_err() {
                return;
            }
        }
    }
    if let Some(rest) = splitter.finish() {
        let _ = sender.send(Message::Line(stream, rest)).await;
    }
}

/// SIGTERM the group, wait up to `grace` for it to empty, then SIGKILL whatever is left and reap
/// the leader.
async fn terminate_group(pgid: i32, grace: Duration, child: &mut tokio::process::Child) {
    if !group::alive(pgid) {
        let _ = child.wait().await;
        return; // the group is already empty
    }
    group::terminate(pgid);
    let deadline = tokio::time::Instant::now() + grace;
    // The leader is reaped as soon as it exits; other members are polled (they are not our
    // children, so there is nothing to wait on).
    let _ = tokio::time::timeout_at(deadline, child.wait()).await;
    while tokio::time::Instant::now() < deadline && group::alive(pgid) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    group::kill(pgid);
    let _ = child.wait().await;
}

/// An exit is an exit whatever its number; a signal only when the OS says so.
fn exit_outcome(status: std::process::ExitStatus) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Outcome::Exited { code },
        (None, Some(signal)) => Outcome::Signaled { signal },
        (None, None) => Outcome::Exited { code: -1 },
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Exited { code } => format!("exit {code}"),
        Outcome::Signaled { signal } => format!("killed by signal {signal}"),
        Outcome::GaveUp => "stopped: the output showed the turn cannot succeed".to_owned(),
        Outcome::WallTimeout => "killed: wall timeout".to_owned(),
        Outcome::IdleTimeout => "killed: idle timeout".to_owned(),
        Outcome::Cancelled => "killed: cancelled".to_owned(),
        Outcome::MissingBinary { program } => format!("missing binary {program}"),
        Outcome::SpawnError { message } => format!("spawn error: {message}"),
    }
}

async fn open_log(spec: &SpawnSpec) -> std::io::Result<tokio::fs::File> {
    if let Some(parent) = spec.log_path.parent() {
        tokio::fs::create_dir_all(parent).await?;
    }
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log_path)
        .await?;
    let argv: Vec<String> = std::iter::once(&spec.program)
        .chain(&spec.args)
        .map(|arg| {
            let arg = arg.to_string_lossy();
            if arg.len() > 200 {
                format!("{}…", arg.chars().take(200).collect::<String>())
            } else {
                arg.into_owned()
            }
        })
        .collect();
    let header = format!(
        "=== {} spawn: {} (stdin: {}) ===\n",
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        argv.join(" "),
        spec.stdin.as_ref().map_or_else(
            || "none".to_owned(),
            |input| format!("{} bytes", input.len())
        ),
    );
    file.write_all(header.as_bytes()).await?;
    Ok(file)
}

/// A turn's log. Writes are best effort — a full disk must not turn a finished turn into a
/// failure — but the first failure is kept, so a turn that failed on a full disk is not counted
/// as the turn's failure.
struct Log {
    file: tokio::fs::File,
    fault: Option<String>,
}

impl Log {
    async fn write(&mut self, bytes: &[u8]) {
        if !bytes.is_empty()
            && let Err(err) = self.file.write_all(bytes).await
        {
            self.fault.get_or_insert_with(|| err.to_string());
        }
    }
}
