//! Taking over a dead session while something other than a live coordinator holds its lock for a
//! moment: a child the killed coordinator was starting (between fork and exec it shares the
//! coordinator's open files, the lock included) or a probe (`crumb ls`, Studio, another run's
//! auto-resume take the lock shared for an instant). Neither is a coordinator: the auto-resume
//! waits for it to let go and resumes the session instead of starting a fresh one.

use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::lifecycle::{bent_session, session_count};
use super::*;
use crumb::process::reap::ProcStat;

/// Whether the lock file at `path` is locked (a shared lock cannot be taken).
fn locked(path: &Path) -> bool {
    let file = File::open(path).unwrap();
    match file.try_lock_shared() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(err) => panic!("probe {}: {err:?}", path.display()),
    }
}

/// Whether process `pid` has `path` open, or has exited (a zombie of ours).
fn has_open_or_exited(pid: u32, path: &Path) -> bool {
    let target = std::fs::metadata(path).unwrap();
    let exited = ProcStat::read(i32::try_from(pid).unwrap()).is_none_or(|s| s.state == 'Z');
    let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|fd| std::fs::metadata(fd.path()).ok())
        .any(|m| m.dev() == target.dev() && m.ino() == target.ino());
    exited || open
}

/// Who holds the dead session's lock while `crumb run` looks for it.
enum Holder {
    /// `flock <lock> sleep`, its `flock` then killed (SIGKILL): the lock stays with the `sleep` child,
    /// as a killed coordinator's lock stays with a child it was starting.
    Child(std::process::Child),
    /// A shared lock, as every probe takes for an instant.
    Probe { _held: File },
}

impl Holder {
    fn child(lock: &Path) -> Holder {
        let mut flock = Command::new("flock")
            .arg(lock)
            .args(["sleep", "600"])
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("flock(1) from util-linux");
        eventually("flock to take the lock", Duration::from_secs(30), || {
            locked(lock).then_some(())
        });
        let leader = Pid::from_raw(i32::try_from(flock.id()).unwrap());
        kill(leader, Signal::SIGKILL).unwrap();
        flock.wait().unwrap();
        assert!(locked(lock), "the sleep child holds the lock alone");
        Holder::Child(flock)
    }

    fn probe(lock: &Path) -> Holder {
        let file = File::open(lock).unwrap();
        file.lock_shared().unwrap();
        Holder::Probe { _held: file }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // The group outlives its leader: the sleep is still in it. A probe's file closes itself.
        if let Holder::Child(flock) = self {
            let _ = killpg(
                Pid::from_raw(i32::try_from(flock.id()).unwrap()),
                Signal::SIGKILL,
            );
        }
    }
}

#[test]
fn auto_resume_waits_for_a_lock_held_only_by_what_a_dead_coordinator_left() {
    for (name, hold) in [
        (
            "a child of the dead coordinator",
            Holder::child as fn(&Path) -> Holder,
        ),
        ("a probe", Holder::probe),
    ] {
        let scratch = Scratch::new();
        // A run cut back to before its verdict: meta `running`, no coordinator.
        let session = bent_session(&scratch, |mut lines| {
            lines.truncate(lines.len() - 2);
            lines
        });
        let lock = session.join("coordinator.lock");
        let holder = hold(&lock);
        let run = scratch.spawn_run("pass", 0, &[]);
        // The run looks at the session while it is held; it lets go only once the run has the
        // lock file open (waiting for it) or has already given up on it and finished.
        eventually(
            "crumb run to wait for the lock",
            Duration::from_secs(60),
            || has_open_or_exited(run.id(), &lock).then_some(()),
        );
        drop(holder);
        let run = run.wait().expect_code(0);
        assert!(
            run.stderr.contains("crumb run: resuming session"),
            "held by {name}: {}",
            run.stderr
        );
        assert_eq!(session_count(&scratch), 1, "held by {name}: {}", run.stderr);
    }
}
