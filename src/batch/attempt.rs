//! One record per pod that tried a pitch (`batches/<id>/attempts/<i>/<n>.json`), so
//! `crumb batch --collect` can say, per index, whether it ran, was retried, failed or never
//! started. Pods of one Job share the home and may overlap (a replacement pod starts while a
//! disrupted one is still being torn down), so each attempt claims its own file with an
//! exclusive create and only ever rewrites that file, whole (temp file + rename): no two
//! processes write the same file, and a reader never sees half of one.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::record::BatchDir;

/// The most attempts of one index looked for (a Job's per-index budget is far below this).
const MAX_ATTEMPTS: u32 = 10_000;
/// The largest attempt record read.
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// What one attempt left in the home.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AttemptRecord {
    /// 1 for the first pod of the index, counting every pod that started.
    pub attempt: u32,
    /// The pod's name (`HOSTNAME`, which Kubernetes sets to it), or the machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    pub pid: u32,
    pub started: String,
    /// Set when the pod's `crumb batch --index` exits; absent when it was killed (or still runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    /// The session the attempt drove, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// An attempt this process started: it alone writes its file.
#[derive(Debug)]
pub(crate) struct Attempt {
    path: PathBuf,
    record: AttemptRecord,
}

fn now() -> String {
    crate::transcript::writer::timestamp(SystemTime::now())
}

fn folder(dir: &BatchDir, index: usize) -> PathBuf {
    dir.path().join("attempts").join(index.to_string())
}

impl Attempt {
    /// Claim the next attempt number of pitch `index` (an exclusive create, so two pods
    /// starting at once get two numbers) and record that it started.
    pub(crate) fn begin(dir: &BatchDir, index: usize) -> std::io::Result<Attempt> {
        let folder = folder(dir, index);
        std::fs::create_dir_all(&folder)?;
        let mut attempt = u32::try_from(numbers(&folder).len()).unwrap_or(u32::MAX);
        loop {
            attempt = attempt.saturating_add(1);
            if attempt > MAX_ATTEMPTS {
                return Err(std::io::Error::other(format!(
                    "{} holds {MAX_ATTEMPTS} attempts already",
                    folder.display()
                )));
            }
            let path = folder.join(format!("{attempt}.json"));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => {
                    let record = AttemptRecord {
                        attempt,
                        pod: std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()),
                        pid: std::process::id(),
                        started: now(),
                        ..AttemptRecord::default()
                    };
                    let begun = Attempt { path, record };
                    begun.write()?;
                    return Ok(begun);
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// Record how the attempt ended: the pod's exit code and the session it drove.
    pub(crate) fn finish(mut self, exit_code: u8, session: Option<String>) -> std::io::Result<()> {
        self.record.ended = Some(now());
        self.record.exit_code = Some(exit_code);
        self.record.session = session.or(self.record.session.take());
        self.write()
    }

    fn write(&self) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(&self.record).map_err(std::io::Error::other)?;
        let tmp = self
            .path
            .with_extension(format!("tmp-{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, &self.path)
    }
}

/// The attempt numbers recorded in `folder`.
fn numbers(folder: &Path) -> Vec<u32> {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_suffix(".json")?
                        .parse::<u32>()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every attempt of pitch `index`, oldest first. A file claimed but not yet written (or not
/// readable) still counts: a pod started.
pub(crate) fn attempts(dir: &BatchDir, index: usize) -> Vec<AttemptRecord> {
    let folder = folder(dir, index);
    let mut numbers = numbers(&folder);
    numbers.sort_unstable();
    numbers
        .into_iter()
        .map(|n| {
            crate::fs::bounded_read::read(&folder.join(format!("{n}.json")), MAX_RECORD_BYTES)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<AttemptRecord>(&bytes).ok())
                .unwrap_or(AttemptRecord {
                    attempt: n,
                    ..AttemptRecord::default()
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::record::{BatchDir, BatchFile};

    fn batch_dir(home: &Path) -> BatchDir {
        let file = BatchFile {
            id: "0123456789abcdef".into(),
            pipeline: PathBuf::from("/project/pipelines/p.yaml"),
            pitches: Vec::new(),
        };
        BatchDir::create(home, &file).unwrap()
    }

    #[test]
    fn pods_starting_at_once_claim_distinct_attempts_and_keep_their_own_records() {
        let home = tempfile::tempdir().unwrap();
        let dir = batch_dir(home.path());
        let codes: Vec<u8> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8u8)
                .map(|code| {
                    let dir = &dir;
                    scope.spawn(move || {
                        let attempt = Attempt::begin(dir, 3).unwrap();
                        attempt.finish(code, Some(format!("s{code}"))).unwrap();
                        code
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let records = attempts(&dir, 3);
        assert_eq!(
            records.iter().map(|r| r.attempt).collect::<Vec<_>>(),
            (1..=8).collect::<Vec<u32>>()
        );
        let mut recorded: Vec<u8> = records.iter().filter_map(|r| r.exit_code).collect();
        recorded.sort_unstable();
        assert_eq!(recorded, codes, "no attempt overwrote another's");
        for record in &records {
            let code = record.exit_code.unwrap();
            assert_eq!(record.session.as_deref(), Some(format!("s{code}").as_str()));
        }
        assert!(attempts(&dir, 0).is_empty(), "indexes are apart");
    }

    #[test]
    fn a_claimed_but_unwritten_attempt_still_counts_as_started() {
        let home = tempfile::tempdir().unwrap();
        let dir = batch_dir(home.path());
        let folder = folder(&dir, 0);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("1.json"), b"").unwrap();
        std::fs::write(folder.join("notes.txt"), b"ignored").unwrap();
        let next = Attempt::begin(&dir, 0).unwrap();
        assert_eq!(next.record.attempt, 2);
        let records = attempts(&dir, 0);
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].exit_code, None);
    }
}
