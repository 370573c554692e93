//! `command`: run a program (argv, no shell) in the artifacts folder and compare its exit code.
//!
//! The program gets its own process group; on timeout the whole group is killed, so a test runner
//! that forks a server cannot outlive QA. Output is captured into bounded buffers (the head and
//! the tail of each stream are kept) so a chatty program cannot exhaust memory. In a session
//! the group is recorded before the program starts (`qa/command-<ulid>.pgid`, see
//! [`crate::process::held`]), so a coordinator killed mid-check leaves nothing resume misses.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::confine;
use super::report::{CheckResult, CheckStatus, Finding};
use crate::process::group::GroupGuard;
use crate::process::recorded_group::{self, HeldGroup, RecordGuard};

/// Bytes kept from the start and from the end of each stream.
const KEEP_HEAD: usize = 8 * 1024;
const KEEP_TAIL: usize = 8 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct CommandCheck<'a> {
    pub id: &'a str,
    pub blocking: bool,
    pub argv: &'a [String],
    pub cwd: Option<&'a str>,
    pub env: &'a [(String, String)],
    pub expect_exit: i32,
    pub timeout: Duration,
    /// Where the program's process group is recorded while it runs (a session's `qa/`).
    pub record_dir: Option<&'a Path>,
}

/// Run a `command` check against `root`.
pub(crate) async fn run(check: &CommandCheck<'_>, root: &Path) -> CheckResult {
    let mut result = CheckResult::new(check.id, "command", check.blocking, CheckStatus::Pass);
    let Some((program, args)) = check.argv.split_first() else {
        result.fail(Finding::new("empty_argv", "`argv` is empty"));
        return result;
    };
    let cwd = match check.cwd {
        None => root.to_path_buf(),
        Some(rel) => match confine::resolve_inside(root, rel) {
            Ok(p) => p,
            Err(escape) => {
                result.fail(Finding::new(confine::Escape::CODE, escape.to_string()));
                return result;
            }
        },
    };
    let mut cmd = crate::process::command::spawned(program);
    cmd.args(args)
        .current_dir(&cwd)
        .envs(check.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let started = Instant::now();
    let (mut child, group, _record) = match start(cmd, check.record_dir).await {
        Ok(started) => started,
        Err(err) => {
            result.fail(Finding::new(
                "spawn_failed",
                format!("could not start `{program}`: {err}"),
            ));
            return result;
        }
    };
    let stdout = tokio::spawn(capture(child.stdout.take()));
    let stderr = tokio::spawn(capture(child.stderr.take()));
    let status = tokio::time::timeout(check.timeout, child.wait()).await;
    let timed_out = status.is_err();
    // Kill whatever is left of the group either way: a finished leader may have left children.
    group.kill();
    let exit = match status {
        Ok(Ok(s)) => s.code(),
        _ => child.wait().await.ok().and_then(|s| s.code()),
    };
    // Readers end when every holder of the pipes is gone; a process that escaped the group could
    // keep them open, so do not wait for them forever.
    let grace = Duration::from_millis(500);
    let out = tokio::time::timeout(grace, stdout)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let err = tokio::time::timeout(grace, stderr)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    result.details = json!({
        "argv": check.argv,
        "exit_code": exit,
        "expect_exit": check.expect_exit,
        "elapsed_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "stdout": out,
        "stderr": err,
    });
    if timed_out {
        result.status = CheckStatus::Timeout;
        result.findings.push(Finding::new(
            "command_timeout",
            format!(
                "`{program}` did not finish within {} ms; its process group was killed",
                check.timeout.as_millis()
            ),
        ));
    } else if exit != Some(check.expect_exit) {
        let got = exit.map_or_else(|| "a signal".to_owned(), |c| c.to_string());
        result.fail(Finding::new(
            "unexpected_exit",
            format!(
                "`{program}` exited with {got}, expected {}",
                check.expect_exit
            ),
        ));
    }
    result
}

/// Start `cmd` in its own process group, recorded in `record_dir` before it starts when given.
async fn start(
    mut cmd: Command,
    record_dir: Option<&Path>,
) -> std::io::Result<(tokio::process::Child, GroupGuard, RecordGuard)> {
    let Some(dir) = record_dir else {
        let child = cmd.process_group(0).spawn()?;
        let group = GroupGuard::new(child.id());
        return Ok((child, group, RecordGuard::default()));
    };
    let record = dir.join(format!("command-{}.pgid", ulid::Ulid::new()));
    let marker = (
        recorded_group::RECORD_ENV.into(),
        record.clone().into_os_string(),
    );
    let holder = HeldGroup::found(&record, "", std::slice::from_ref(&marker))?;
    let pgid = holder.pgid();
    let spawned = cmd.process_group(pgid).env(&marker.0, &marker.1).spawn();
    holder.release().await;
    let guard = RecordGuard(Some(record));
    let child = spawned?;
    Ok((child, GroupGuard::new(u32::try_from(pgid).ok()), guard))
}

/// Read a stream to its end, keeping the head and the tail.
async fn capture<R: AsyncRead + Unpin>(stream: Option<R>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut head = Vec::new();
    let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
    let mut dropped: u64 = 0;
    let mut buf = [0u8; 8192];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if head.len() < KEEP_HEAD {
                head.push(b);
            } else {
                tail.push_back(b);
                if tail.len() > KEEP_TAIL {
                    tail.pop_front();
                    dropped += 1;
                }
            }
        }
    }
    let mut text = String::from_utf8_lossy(&head).into_owned();
    if dropped > 0 {
        use std::fmt::Write as _;
        let _ = write!(text, "\n… [{dropped} bytes omitted] …\n");
    }
    let tail: Vec<u8> = tail.into_iter().collect();
    text.push_str(&String::from_utf8_lossy(&tail));
    text
}
