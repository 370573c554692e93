//! A turn's containment beyond its process group: the agent runs under `crumb turn-shim`, a child
//! subreaper. Whatever the agent leaves behind when it exits — a double fork, a `setsid`, a
//! process that cleared its environment so no marker names it — is re-parented to the shim
//! rather than to init, and the shim kills and reaps all of it before it reports the agent's exit
//! status. A same-user agent can still kill the shim itself (its parent) first; the README's
//! trust model says so, and names the container or PID namespace that closes that too.

use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use super::reap::ProcStat;

/// Most kill-and-reap rounds: a fork bomb that outpaces them is still stopped by the turn's
/// process group and marker, which the dispatcher kills after the shim.
const MAX_ROUNDS: usize = 10_000;

/// The signals a turn's group receives when crumb stops it: the shim waits them out (its agent
/// gets them too) so it is alive to clean up after the agent.
const WAITED_OUT: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// Why the shim could not run its agent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShimError {
    #[error("no program to run")]
    NoProgram,
    #[error("cannot become a child subreaper: {0}")]
    Subreaper(Errno),
    #[error("cannot start {program}: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot wait for {program}: {source}")]
    Wait {
        program: String,
        source: std::io::Error,
    },
}

/// Run `argv` as a contained child: its stdio and environment are the shim's; once it exits,
/// every process left under the shim is killed and reaped. Returns the agent's exit status.
pub(crate) fn run_contained(command_line: &[OsString]) -> Result<ExitStatus, ShimError> {
    let (program, args) = command_line.split_first().ok_or(ShimError::NoProgram)?;
    nix::sys::prctl::set_child_subreaper(true).map_err(ShimError::Subreaper)?;
    // A handler, not SIG_IGN: handlers are reset by `exec`, so the agent keeps the default
    // dispositions while the shim survives the group's stop signal.
    let stopped = Arc::new(AtomicBool::new(false));
    for signal in WAITED_OUT {
        let _ = signal_hook::flag::register(signal as i32, Arc::clone(&stopped));
    }
    let name = program.to_string_lossy().into_owned();
    let mut child = super::command::blocking(program)
        .args(args)
        .stdin(Stdio::inherit())
        .spawn()
        .map_err(|source| ShimError::Start {
            program: name.clone(),
            source,
        })?;
    let status = child.wait().map_err(|source| ShimError::Wait {
        program: name,
        source,
    })?;
    kill_and_reap_the_rest();
    Ok(status)
}

/// Kill every child of this process (the subreaper's adopted orphans among them) and reap it,
/// round after round, until none is left: a killed process's own children are adopted next.
fn kill_and_reap_the_rest() {
    let me = std::process::id();
    for _ in 0..MAX_ROUNDS {
        for pid in children_of(me) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        match waitpid(None::<Pid>, None) {
            Err(Errno::EINTR) | Ok(_) => {}
            // No child left (ECHILD), or none to wait for.
            Err(_) => return,
        }
    }
}

/// Pids whose parent is `parent`.
fn children_of(parent: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| ProcStat::read(pid).is_some_and(|stat| stat.ppid == parent))
        .collect()
}
