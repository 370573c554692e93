//! Reaping what Chromium leaves behind.
//!
//! After the browser dies its zygotes and crashpad handlers are orphaned. Becoming a child
//! subreaper makes them our children instead of PID 1's (which reaps lazily on some machines), and
//! we then reap exactly those — zombies whose parent is us and whose name starts with `chrom` —
//! never with `waitpid(-1)`, which would steal the exit statuses tokio waits for.

use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// Make orphaned descendants re-parent to this process. Idempotent; failure is harmless (the
/// orphans then go to PID 1 as before).
///
/// Opt-in, once per process: `crumb qa` does it so that nothing of Chromium outlives it, even as a
/// zombie. A long-lived coordinator may prefer not to, since it would then adopt every orphan of
/// every adapter too; Chromium's dead children are then reaped by PID 1 instead.
pub(crate) fn become_subreaper() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// Reap zombie Chromium processes that are our children. Returns how many were reaped.
pub(crate) fn reap_chromium_zombies() -> usize {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut reaped = 0;
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(stat) = ProcStat::read(pid) else {
            continue;
        };
        if stat.state == 'Z'
            && stat.ppid == me
            && stat.comm.starts_with("chrom")
            && waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)).is_ok()
        {
            reaped += 1;
        }
    }
    reaped
}

/// Pids of the processes (other than this one) whose environment holds `marker` (`KEY=value`),
/// read through `/proc` (a zombie has none, so it is never counted).
pub(crate) fn pids_carrying(marker: &str) -> Vec<i32> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let marker = marker.as_bytes();
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == marker))
        })
        .collect()
}

/// Pids of live or zombie processes whose process group is `pgid`.
pub fn members_of_group(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|&pid| ProcStat::read(pid).is_some_and(|s| s.pgrp == pgid))
        .collect()
}

/// The fields of `/proc/<pid>/stat` we need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    pub pgrp: i32,
    /// When the process started, in clock ticks after boot (`starttime`, field 22): with the pid,
    /// it names one process, never a later one that reuses the id. `None` on a short line.
    pub start_time: Option<u64>,
}

impl ProcStat {
    pub fn read(pid: i32) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Parse a stat line; `comm` may contain spaces and parentheses, so split at the last `)`.
    pub(crate) fn parse(line: &str) -> Option<Self> {
        let open = line.find('(')?;
        let close = line.rfind(')')?;
        let comm = line.get(open + 1..close)?.to_owned();
        let mut rest = line.get(close + 1..)?.split_whitespace();
        let state = rest.next()?.chars().next()?;
        let ppid = rest.next()?.parse().ok()?;
        let pgrp = rest.next()?.parse().ok()?;
        // Fields 6 to 21 lie between the group and the start time.
        let start_time = rest.nth(16).and_then(|field| field.parse().ok());
        Some(ProcStat {
            comm,
            state,
            ppid,
            pgrp,
            start_time,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_odd_names() {
        let s = ProcStat::parse("123 (chrome (x) y) Z 1 77 77 0 -1").unwrap();
        assert_eq!(
            (s.comm.as_str(), s.state, s.ppid, s.pgrp),
            ("chrome (x) y", 'Z', 1, 77)
        );
        assert_eq!(s.start_time, None, "a short line has no start time");
        let line = "42 (crumb) S 1 42 42 0 -1 4194560 1 0 0 0 3 1 0 0 20 0 3 0 987654 1 2";
        assert_eq!(ProcStat::parse(line).unwrap().start_time, Some(987_654));
        let me = ProcStat::read(i32::try_from(std::process::id()).unwrap()).unwrap();
        assert!(me.start_time.is_some());
        assert!(ProcStat::parse("garbage").is_none());
        assert!(ProcStat::parse("1 (a) ").is_none());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(line in "\\PC{0,120}") {
            let _ = ProcStat::parse(&line);
        }
    }
}
