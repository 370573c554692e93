//! Process groups that are on disk before anything runs in them.
//!
//! A child's pid is known only once it runs, so recording its group after the spawn leaves a
//! window in which a killed crumb leaves work that `crumb resume` cannot find (and so runs the
//! turn a second time). The rule: **a group is recorded before any real work joins it.** A
//! harmless holder (`cat` on a pipe only we write) founds the group; its pid, the group id, is
//! written and synced to the record file; only then is the real command started, joining that
//! group. If crumb dies before the record exists, the holder reads end-of-file and exits, and
//! nothing else was started.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The holder: reads its stdin (a pipe only crumb writes to) until end-of-file, then exits.
/// Absolute paths: the group must not depend on the `PATH` a run was given.
const HOLDERS: [&str; 2] = ["/usr/bin/cat", "/bin/cat"];

/// A process group founded by a holder and recorded on disk.
#[derive(Debug)]
pub(crate) struct HeldGroup {
    holder: tokio::process::Child,
    pgid: i32,
    record: PathBuf,
}

impl HeldGroup {
    /// Found a group and write `<pgid>\n<extra>` to `record` (synced) before returning. `env`
    /// is given to the holder too, so the group carries its markers from its first process.
    pub(crate) fn found(
        record: &Path,
        extra: &str,
        env: &[(OsString, OsString)],
    ) -> std::io::Result<HeldGroup> {
        let holder = HOLDERS
            .iter()
            .find(|path| Path::new(path).is_file())
            .ok_or_else(|| std::io::Error::other("no `cat` to hold the group open"))?;
        let mut holder = super::command::spawned(holder)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let Some(pgid) = holder
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .filter(|&id| id > 1)
        else {
            let _ = holder.start_kill();
            return Err(std::io::Error::other("the group holder has no pid"));
        };
        if let Err(err) = write_synced(record, &format!("{pgid}\n{extra}")) {
            let _ = holder.start_kill();
            return Err(err);
        }
        Ok(HeldGroup {
            holder,
            pgid,
            record: record.to_path_buf(),
        })
    }

    /// The group id the real command must join (`process_group(pgid)`).
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Where the group is recorded.
    pub(crate) fn record(&self) -> &Path {
        &self.record
    }

    /// The real command joined (or could not start): stop and reap the holder, so the group
    /// lives exactly as long as the processes doing the work.
    pub(crate) async fn release(mut self) {
        let _ = self.holder.start_kill();
        let _ = self.holder.wait().await;
    }
}

/// Set on a recorded group's command when nothing else marks it as ours: the record's path.
pub(crate) const RECORD_ENV: &str = "CRUMB_GROUP_RECORD";

/// The marker [`RECORD_ENV`] gives a group recorded in `record`, for [`reap_recorded`].
pub(crate) fn record_marker(record: &Path) -> String {
    format!("{RECORD_ENV}={}", record.display())
}

/// A group record, removed when dropped unless taken (every exit path of its owner).
#[derive(Debug, Default)]
pub(crate) struct RecordGuard(pub Option<PathBuf>);

impl Drop for RecordGuard {
    fn drop(&mut self) {
        if let Some(record) = &self.0 {
            let _ = std::fs::remove_file(record);
        }
    }
}

/// Write `text` to `path` and sync it, so the record survives the crash it is there for.
fn write_synced(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::File::create(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// Kill the group recorded in `record` if one of its processes still carries `marker`
/// (`KEY=value`) in its environment: checked through `/proc`, so a reused id is never hit. The
/// record is removed either way. Returns whether a group was killed.
pub(crate) fn reap_recorded(record: &Path, marker: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(record) else {
        return false;
    };
    let _ = std::fs::remove_file(record);
    let Some(pgid) = text
        .lines()
        .next()
        .and_then(|line| line.trim().parse::<i32>().ok())
        .filter(|&pgid| pgid > 1)
    else {
        return false;
    };
    let marker = marker.as_bytes();
    let ours = crate::process::reap::members_of_group(pgid)
        .into_iter()
        .any(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == marker))
        });
    if ours {
        super::group::kill(pgid);
    }
    ours
}

/// The second line of a record (what [`HeldGroup::found`] wrote after the group id).
pub(crate) fn recorded_extra(record: &Path) -> Option<String> {
    let text = std::fs::read_to_string(record).ok()?;
    text.lines()
        .nth(1)
        .map(str::to_owned)
        .filter(|s| !s.is_empty())
}
