//! Reaping what a dead coordinator left running in a session.
//!
//! Every process group crumb starts for a session is recorded in the session before it does any
//! work: agents in `logs/<role>-<n>.pgid`, QA browsers in `qa/browser-<ulid>.pgid` (with their
//! profile folder), QA commands in `qa/command-<ulid>.pgid`. Whoever takes the session over (`crumb resume`, or the next `crumb run` of
//! the same pitch) holds its lock, so every record still on disk belongs to a dead coordinator:
//! each is killed (if its processes still carry the session's marker) and removed before anything
//! new starts, and so is any process that left its recorded group but still carries the
//! session's id in its environment. Last, browser profiles whose owner is gone are swept
//! ([`crate::qa::browser::profile`]).

use std::path::Path;

use super::session_dir::SessionDir;
use crate::process;
use crate::qa::browser::launch;

/// Kill every recorded group of `session` and remove the records (and browser profiles).
/// Returns how many live groups were killed.
pub(crate) fn reap(session: &SessionDir) -> usize {
    let mut killed = 0;
    for record in records(&session.path().join("logs")) {
        killed += usize::from(process::kill_orphan(&record, session.id()));
    }
    // What left its recorded group (`setsid`, a double fork) still carries the session's id.
    killed += process::group::kill_marked(&format!("CRUMB_SESSION_ID={}", session.id()));
    killed += reap_qa_records(&session.qa_dir());
    // A browser profile made before its group was recorded (or by a killed standalone QA) is
    // named after its owner: gone with it.
    crate::qa::browser::profile::sweep();
    killed
}

/// Kill every QA group recorded in `dir` (browsers with their profiles, QA commands) by a process
/// that died, and remove the records. Returns how many live groups were killed.
pub(crate) fn reap_qa_records(dir: &Path) -> usize {
    let mut killed = 0;
    for record in records(dir) {
        let browser = record
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("browser-"));
        killed += usize::from(if browser {
            launch::reap_recorded(&record)
        } else {
            process::recorded_group::reap_recorded(
                &record,
                &process::recorded_group::record_marker(&record),
            )
        });
    }
    killed
}

/// The `*.pgid` files directly in `dir`.
fn records(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "pgid"))
        .collect()
}
