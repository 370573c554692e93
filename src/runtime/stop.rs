//! Stopping a session's live coordinator: SIGTERM to the pid its meta records, and only while
//! that coordinator holds the session's lock (never a stale pid). The coordinator ends its live
//! turns and exits; `crumb resume` continues the session.

use super::lock;
use super::session_dir::SessionDir;

/// Ask the coordinator of `session` to stop; answers with its pid.
pub(crate) fn stop_coordinator(session: &SessionDir) -> Result<i32, String> {
    let meta = session.read_meta().map_err(|e| e.to_string())?;
    let pid = meta
        .pid
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p > 1 && lock::is_held(session.path()))
        .ok_or("no coordinator is running for this session")?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .map_err(|e| format!("cannot stop it: {e}"))?;
    Ok(pid)
}
