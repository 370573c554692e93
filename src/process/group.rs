//! The one place that signals process groups. Every child crumb starts (agents, QA commands,
//! Chromium) leads its own group, so a timeout, an error or a dropped future stops every process
//! the child started, not just the child.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// A usable group id (never 0, 1 or negative, which would hit far more than one group).
fn group(pgid: i32) -> Option<Pid> {
    (pgid > 1).then(|| Pid::from_raw(pgid))
}

/// Whether any process of the group is still alive.
pub(crate) fn alive(pgid: i32) -> bool {
    group(pgid).is_some_and(|pid| killpg(pid, None).is_ok())
}

/// Ask every process of the group to stop (SIGTERM). Harmless if the group is gone.
pub(crate) fn terminate(pgid: i32) {
    if let Some(pid) = group(pgid) {
        let _ = killpg(pid, Signal::SIGTERM);
    }
}

/// SIGKILL every process of the group now. Harmless if the group is already gone.
pub(crate) fn kill(pgid: i32) {
    if let Some(pid) = group(pgid) {
        let _ = killpg(pid, Signal::SIGKILL);
    }
}

/// Kills a process group with SIGKILL when dropped (unless [`GroupGuard::disarm`]ed).
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    /// Guard the group led by `pid` (a child spawned with `process_group(0)`).
    pub(crate) fn new(pid: Option<u32>) -> Self {
        GroupGuard {
            pgid: pid.and_then(|p| i32::try_from(p).ok()).filter(|&p| p > 1),
        }
    }

    /// The group id, if any.
    pub(crate) fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// SIGKILL every process of the group now. Harmless if the group is already gone.
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.pgid {
            kill(pgid);
        }
    }

    /// Stop guarding (the group was reaped and its id may be reused).
    pub(crate) fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Ask one process to stop (SIGTERM): `crumb batch` stopping a child `crumb run` at its wall
/// budget, which then stops its own groups and stays resumable. Harmless if it is gone.
pub(crate) fn terminate_process(pid: u32) {
    if let Ok(raw) = i32::try_from(pid)
        && raw > 1
    {
        let _ = nix::sys::signal::kill(Pid::from_raw(raw), Signal::SIGTERM);
    }
}

/// SIGKILL every process whose environment holds `marker` (`KEY=value`), whatever its group or
/// session, never this process: what a turn left behind by leaving its group (`setsid`, a double
/// fork) still carries the turn's variables. Passes over `/proc` repeat until one finds nothing
/// (at most a few), so a process that forks while it is scanned is caught on the next pass.
/// Returns how many processes were killed.
pub(crate) fn kill_marked(marker: &str) -> usize {
    const PASSES: usize = 5;
    let mut killed = 0;
    for _ in 0..PASSES {
        let found = super::reap::pids_carrying(marker);
        if found.is_empty() {
            break;
        }
        for pid in found {
            if pid > 1 && nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                killed += 1;
            }
        }
    }
    killed
}
