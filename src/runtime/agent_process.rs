//! Running one agent turn as a child process: its own process group, the prompt on stdin, stdout
//! and stderr streamed to a log file as they arrive, a wall-clock and an idle deadline, and a
//! cancel signal. Whatever happens, the whole group is killed before [`run`] returns, so no
//! grandchild outlives the turn.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};

/// How long a group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// How much of the end of stdout is kept for usage parsing.
const STDOUT_TAIL: usize = 256 * 1024;
/// How much of the end of stderr is kept for error events.
const STDERR_TAIL: usize = 4 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(String, OsString)>,
    /// Inherited variables the child must not see (an agent CLI's nesting guards).
    pub env_remove: Vec<OsString>,
    pub cwd: PathBuf,
    /// Written to stdin, then closed; `None` connects stdin to `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Where stdout and stderr are streamed.
    pub log: PathBuf,
    /// Where the process-group id is recorded while the turn runs (a resumed coordinator reads it
    /// to stop an orphan of a coordinator that was killed).
    pub pgid_file: PathBuf,
    pub wall: Duration,
    pub idle: Duration,
}

/// Which deadline ended a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    Wall,
    Idle,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The process exited with this code.
    Exited(i32),
    /// The process died from this signal.
    Signalled(i32),
    TimedOut(Deadline),
    Cancelled,
    /// The program does not exist.
    MissingBinary(String),
    /// The program exists but could not be started.
    SpawnFailed(String),
}

/// A finished turn.
#[derive(Debug, Clone)]
pub struct Finished {
    pub ending: Ending,
    pub duration_ms: u64,
    /// The last bytes of stdout (for usage parsing).
    pub stdout_tail: Vec<u8>,
    /// The last bytes of stderr, lossily decoded.
    pub stderr_tail: String,
}

enum Chunk {
    Out(Vec<u8>),
    Err(Vec<u8>),
}

/// Run `launch` until it exits, a deadline passes or `cancel` fires.
pub async fn run(launch: Launch, mut cancel: oneshot::Receiver<()>) -> Finished {
    let started = Instant::now();
    let mut log = open_log(&launch);
    let mut command = command(&launch);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            let program = launch.program.to_string_lossy().into_owned();
            let ending = if err.kind() == std::io::ErrorKind::NotFound {
                Ending::MissingBinary(program)
            } else {
                Ending::SpawnFailed(format!("{program}: {err}"))
            };
            log_line(&mut log, &format!("=== could not start: {ending:?} ==="));
            return Finished {
                ending,
                duration_ms: elapsed_ms(started),
                stdout_tail: Vec::new(),
                stderr_tail: String::new(),
            };
        }
    };
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    if let Some(pgid) = pgid {
        let _ = std::fs::write(&launch.pgid_file, format!("{pgid}\n"));
    }

    if let (Some(mut stdin), Some(prompt)) = (child.stdin.take(), launch.stdin.clone()) {
        tokio::spawn(async move {
            // A child that does not read its prompt is its own business.
            let _ = stdin.write_all(&prompt).await;
            let _ = stdin.shutdown().await;
        });
    }
    let mut chunks = read_streams(&mut child);

    let wall_deadline = tokio::time::Instant::from_std(started + launch.wall);
    let mut idle_deadline = tokio::time::Instant::now() + launch.idle;
    let mut stdout_tail = Vec::new();
    let mut stderr_tail = Vec::new();
    let mut streams_open = true;
    let ending = loop {
        let deadline = wall_deadline.min(idle_deadline);
        tokio::select! {
            chunk = chunks.recv(), if streams_open => match chunk {
                Some(chunk) => {
                    idle_deadline = tokio::time::Instant::now() + launch.idle;
                    record(&chunk, &mut log, &mut stdout_tail, &mut stderr_tail);
                }
                None => streams_open = false,
            },
            status = child.wait() => {
                break match status {
                    Ok(status) => status.code().map_or_else(
                        || Ending::Signalled(std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)),
                        Ending::Exited,
                    ),
                    Err(err) => Ending::SpawnFailed(format!("wait failed: {err}")),
                };
            },
            () = tokio::time::sleep_until(deadline) => {
                let which = if deadline == wall_deadline { Deadline::Wall } else { Deadline::Idle };
                terminate(pgid, &mut child).await;
                break Ending::TimedOut(which);
            },
            _ = &mut cancel => {
                terminate(pgid, &mut child).await;
                break Ending::Cancelled;
            },
        }
    };
    // The turn is over: nothing it started may linger (and hold our pipes open).
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let drain_until = tokio::time::Instant::now() + Duration::from_millis(200);
    while streams_open {
        match tokio::time::timeout_at(drain_until, chunks.recv()).await {
            Ok(Some(chunk)) => record(&chunk, &mut log, &mut stdout_tail, &mut stderr_tail),
            Ok(None) | Err(_) => streams_open = false,
        }
    }
    let _ = std::fs::remove_file(&launch.pgid_file);
    let duration_ms = elapsed_ms(started);
    log_line(
        &mut log,
        &format!("=== {ending:?} after {duration_ms} ms ==="),
    );
    Finished {
        ending,
        duration_ms,
        stdout_tail,
        stderr_tail: String::from_utf8_lossy(&stderr_tail).into_owned(),
    }
}

/// The child's command: its own process group, piped output, the environment of the turn.
fn command(launch: &Launch) -> Command {
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_os_str())))
        .current_dir(&launch.cwd)
        .stdin(if launch.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in &launch.env_remove {
        command.env_remove(name);
    }
    command
}

/// Forward the child's stdout and stderr, chunk by chunk, as they arrive.
fn read_streams(child: &mut tokio::process::Child) -> mpsc::Receiver<Chunk> {
    let (chunks_tx, chunks) = mpsc::channel::<Chunk>(64);
    if let Some(mut out) = child.stdout.take() {
        let tx = chunks_tx.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n) = out.read(&mut buf).await {
                if n == 0 || tx.send(Chunk::Out(buf[..n].to_vec())).await.is_err() {
                    break;
                }
            }
        });
    }
    if let Some(mut err) = child.stderr.take() {
        let tx = chunks_tx.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 || tx.send(Chunk::Err(buf[..n].to_vec())).await.is_err() {
                    break;
                }
            }
        });
    }
    drop(chunks_tx);
    chunks
}

/// SIGTERM the group, then SIGKILL it if the leader is still there after the grace period.
async fn terminate(pgid: Option<i32>, child: &mut tokio::process::Child) {
    let Some(pgid) = pgid else {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return;
    };
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
    if tokio::time::timeout(KILL_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        let _ = child.wait().await;
    }
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
}

/// Kill a process group left by a coordinator that died, if it still runs crumb work for
/// `session_id` (checked through `/proc`, so a reused id is never hit).
pub fn kill_orphan(pgid_file: &std::path::Path, session_id: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(pgid_file) else {
        return false;
    };
    let _ = std::fs::remove_file(pgid_file);
    let Ok(pgid) = text.trim().parse::<i32>() else {
        return false;
    };
    if pgid <= 1 {
        return false;
    }
    let marker = format!("CRUMB_SESSION_ID={session_id}");
    let ours = std::fs::read(format!("/proc/{pgid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == marker.as_bytes()));
    if ours {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    ours
}

fn record(
    chunk: &Chunk,
    log: &mut Option<std::fs::File>,
    stdout_tail: &mut Vec<u8>,
    stderr_tail: &mut Vec<u8>,
) {
    let (bytes, tail, limit) = match chunk {
        Chunk::Out(bytes) => (bytes, &mut *stdout_tail, STDOUT_TAIL),
        Chunk::Err(bytes) => (bytes, &mut *stderr_tail, STDERR_TAIL),
    };
    if let Some(file) = log.as_mut() {
        let _ = file.write_all(bytes);
    }
    tail.extend_from_slice(bytes);
    if tail.len() > limit {
        let cut = tail.len() - limit;
        tail.drain(..cut);
    }
}

fn open_log(launch: &Launch) -> Option<std::fs::File> {
    if let Some(parent) = launch.log.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&launch.log)
        .ok()
}

fn log_line(log: &mut Option<std::fs::File>, line: &str) {
    if let Some(file) = log.as_mut() {
        let _ = writeln!(file, "\n{line}");
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
