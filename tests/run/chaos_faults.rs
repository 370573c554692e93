//! The faults the chaos suite draws besides SIGKILL: the disk filling up during a run (the
//! crumb home is a tmpfs in a private mount namespace, so the kernel answers ENOSPC), and stdout
//! full (`/dev/full`) or closed for a whole run. Each is recovered as a user would — `crumb
//! resume <id>` as the storage fault's message says, or `crumb resume` for the outcome a run
//! could not print — and checked like a kill.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::RngExt;
use proptest::test_runner::TestRng;

use serde_json::Value;

use super::chaos::{Case, Faults, Yardstick, complete_lines, phase_of};
use crate::support::{Crumb, Run};

/// Set in the re-executed test process that runs inside the mount namespace.
const IN_NAMESPACE: &str = "CRUMB_CHAOS_IN_NAMESPACE";
/// The tmpfs holding the chaos home: room for hundreds of mock sessions (about 200 KiB each).
const HOME_SIZE: &str = "size=256m";

/// What one attempt of a case does to its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Fault {
    Kill,
    DiskFull,
    StdoutFull,
    StdoutClosed,
}

impl Fault {
    /// Six in ten attempts are kills, two fill the disk, two break stdout.
    pub(super) fn draw(rng: &mut TestRng) -> Fault {
        match rng.random_range(0..10) {
            0..=5 => Fault::Kill,
            6 | 7 => Fault::DiskFull,
            8 => Fault::StdoutFull,
            _ => Fault::StdoutClosed,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::DiskFull => "disk full",
            Fault::StdoutFull => "stdout full",
            Fault::StdoutClosed => "stdout closed",
        }
    }

    /// The shell redirect of a stdout fault.
    pub(super) fn redirect(self) -> Option<&'static str> {
        match self {
            Fault::StdoutFull => Some(">/dev/full"),
            Fault::StdoutClosed => Some(">&-"),
            Fault::Kill | Fault::DiskFull => None,
        }
    }
}

/// `crumb <args>` through `sh` with stdout redirected by `redirect`.
pub(super) fn with_stdout(redirect: &str) -> Crumb {
    Crumb::shell(&format!(r#"exec "$CRUMB" "$@" {redirect}"#)).arg("sh")
}

/// Whether this process is the one inside the namespace; if not, run `test` again in one (the
/// crumb home then a tmpfs) and fail with its output if it fails. Returns true to go on.
pub(super) fn in_namespace(test: &str) -> bool {
    if std::env::var_os(IN_NAMESPACE).is_some() {
        return true;
    }
    let prefix = super::disk_full::namespace().join(" ");
    let exe = std::env::current_exe().unwrap();
    let run = Crumb::shell(&format!(r#"exec {prefix} "$0" "$@""#))
        .arg(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(IN_NAMESPACE, "1")
        .timeout(Duration::from_secs(3 * 3600))
        .run();
    eprint!("{}", run.stderr);
    assert_eq!(
        run.code, 0,
        "{test} in its mount namespace:\n{}",
        run.stdout
    );
    false
}

/// The chaos home mounted as a tmpfs (inside the namespace only); unmounted when dropped, so
/// the scratch folder under it can be removed.
pub(super) struct MountedHome(PathBuf);

pub(super) fn mount_home(home: &Path) -> MountedHome {
    std::fs::create_dir_all(home).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", HOME_SIZE, "crumbchaos"])
        .arg(home)
        .status()
        .unwrap();
    assert!(mounted.success(), "cannot mount the chaos home");
    MountedHome(home.to_path_buf())
}

impl Drop for MountedHome {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .args(["--lazy"])
            .arg(&self.0)
            .status();
    }
}

/// A file filling the home's file system, removed (space freed) when dropped.
pub(super) struct Filler(PathBuf);

impl Filler {
    /// Fill `home`'s file system up to `leave` bytes free.
    pub(super) fn fill(home: &Path, leave: u64) -> Filler {
        let path = home.join(".chaos-filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        loop {
            let free = nix::sys::statvfs::statvfs(home)
                .map_or(0, |s| s.blocks_available() * s.fragment_size());
            if free <= leave {
                break;
            }
            let size = usize::try_from((free - leave).min(chunk.len() as u64)).unwrap();
            if file.write_all(&chunk[..size]).is_err() {
                break;
            }
        }
        Filler(path)
    }
}

impl Drop for Filler {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What a run that hit a full disk said it must do next.
pub(super) enum Stopped {
    /// `crumb resume <id>` once space is freed.
    Resume(String),
    /// No session was created: the same command again.
    Again,
}

/// Read a run stopped by a full disk: exit 1 naming the cause and the free space, and what to
/// do next; `None` when the run did not stop for it (the disk filled after its last write).
pub(super) fn stopped(run: &Run) -> Option<Result<Stopped, String>> {
    let said = |what: &str| run.stderr.contains(what);
    if !said("a write to the session failed") && !said("no session was created") {
        return None;
    }
    if run.code != 1 || !said("KiB free") {
        return Some(Err(format!(
            "a full disk exited {} without the free space: {}",
            run.code, run.stderr
        )));
    }
    if said("no session was created") {
        return Some(Ok(Stopped::Again));
    }
    let id = run
        .stderr
        .split("`crumb resume ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned);
    Some(id.map(Stopped::Resume).ok_or_else(|| {
        format!(
            "a storage fault without the `crumb resume <id>`: {}",
            run.stderr
        )
    }))
}

/// The whole run with stdout full or closed: it still reaches its outcome and leaves its
/// session whole (`crumb resume` then reports that outcome); a full stdout exits 1.
pub(super) fn stdout_fault(
    case: &Case,
    yardstick: &Yardstick,
    fault: Fault,
    redirect: &str,
    faults: &mut Faults,
) {
    let run = case.command_via(with_stdout(redirect)).run();
    let allowed = i32::from(fault == Fault::StdoutFull);
    if run.code != allowed && run.code != yardstick.code {
        faults.wrong.push(format!(
            "{}: exit {}: {}",
            fault.name(),
            run.code,
            run.stderr.trim_end()
        ));
    }
}

/// How a run on a filling disk went.
pub(super) enum DiskFull {
    /// The disk filled after the run's last write: the run to judge.
    Missed(crate::support::Run),
    /// It stopped in this phase, and this is its recovery once space was freed.
    Recovered(&'static str, crate::support::Run),
}

/// Run `case` with the disk filling at a drawn point (the space left is drawn up to about what a
/// whole mock session takes), then free the space and do what the storage fault's message says.
pub(super) fn disk_full(
    case: &Case,
    rng: &mut TestRng,
    before: &mut Vec<String>,
    faults: &mut Faults,
) -> DiskFull {
    let leave = rng.random_range(0..=160 * 1024);
    let filler = Filler::fill(&case.scratch.home(), leave);
    let run = case.command().run();
    drop(filler);
    let stopped = match stopped(&run) {
        None => return DiskFull::Missed(run),
        Some(Err(why)) => {
            faults.wrong.push(why);
            return DiskFull::Missed(run);
        }
        Some(Ok(stopped)) => stopped,
    };
    let lines = case
        .session()
        .as_deref()
        .map(complete_lines)
        .unwrap_or_default();
    let parsed: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if !lines.starts_with(before) {
        faults
            .lost
            .push("lines written before the disk filled are gone".into());
    }
    *before = lines;
    let recovered = match stopped {
        Stopped::Resume(id) => case.scratch.command(&["resume", "--json", &id]).run(),
        Stopped::Again => case.command().run(),
    };
    DiskFull::Recovered(phase_of(&parsed), recovered)
}
