//! Owning a child's whole process group, so that a timeout, an error or a dropped future kills
//! every process the child started, not just the child.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Kills a process group with SIGKILL when dropped (unless [`GroupGuard::disarm`]ed).
#[derive(Debug)]
pub struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    /// Guard the group led by `pid` (a child spawned with `process_group(0)`).
    pub fn new(pid: Option<u32>) -> Self {
        GroupGuard {
            pgid: pid.and_then(|p| i32::try_from(p).ok()).filter(|&p| p > 1),
        }
    }

    /// The group id, if any.
    pub fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// SIGKILL every process of the group now. Harmless if the group is already gone.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }

    /// Stop guarding (the group was reaped and its id may be reused).
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
