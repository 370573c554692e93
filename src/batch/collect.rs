//! `crumb batch --collect <home>`: the summary of a batch whose sessions were written by other
//! processes or machines (a Kubernetes Indexed Job's pods) into a shared crumb home. Each pitch is
//! matched to the newest session with that goal (and, when known, that pipeline's name), read
//! from its folder exactly as a local batch reads it; when the batch's folder holds the pods'
//! attempt records, each row also says what the pods did (ran, retried, failed, killed, never
//! started), so a pod-level failure is never mistaken for a session's outcome or the reverse.

use std::path::Path;

use super::attempt::{self, AttemptRecord};
use super::plan::Pitch;
use super::record::BatchDir;
use super::summary::{Pods, Row};
use crate::home::CrumbHome;
use crate::runtime::listing;

/// One row per pitch, from the sessions under `home` (and the attempts in `batch`, if given).
pub(crate) fn collect(
    home: &Path,
    pitches: &[Pitch],
    pipeline_name: Option<&str>,
    batch: Option<&BatchDir>,
) -> Vec<Row> {
    let (sessions, _) = listing::list(&CrumbHome::at(home), None);
    pitches
        .iter()
        .enumerate()
        .map(|(index, pitch)| {
            let mut row = sessions
                .iter()
                .filter(|s| s.goal == pitch.pitch)
                .filter(|s| pipeline_name.is_none_or(|name| s.pipeline == name))
                .max_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)))
                .map_or_else(
                    || Row::not_run(index, &pitch.pitch, "no session for this pitch in the home"),
                    |s| Row::of_session(index, &pitch.pitch, &s.path),
                );
            if let Some(dir) = batch {
                let pods = pods(&row, &attempt::attempts(dir, index));
                match (pods.state, pods.exit_code) {
                    ("never started", _) => row.note = Some("no pod started this index".into()),
                    ("failed", Some(code)) => {
                        row.note = Some(format!(
                            "its last pod exited {code}; what crumb run said: {}",
                            dir.path()
                                .join("pitches")
                                .join(format!("{index}.log"))
                                .display()
                        ));
                    }
                    _ => {}
                }
                row.pods = Some(pods);
            }
            row
        })
        .collect()
}

/// What the attempts of one index say, read with its session's row: a session that ended is
/// a result whatever happened to earlier pods; otherwise the last pod's record tells.
pub(crate) fn pods(row: &Row, attempts: &[AttemptRecord]) -> Pods {
    let count = u32::try_from(attempts.len()).unwrap_or(u32::MAX);
    let last = attempts.last();
    let exit_code = last.and_then(|a| a.exit_code);
    let state = if row.ended() {
        if count > 1 { "retried" } else { "ran" }
    } else {
        match (last, exit_code) {
            (None, _) if row.session.is_none() => "never started",
            (Some(_), Some(code)) if code != 0 => "failed",
            _ => "killed",
        }
    };
    Pods {
        state,
        attempts: count,
        exit_code,
    }
}

/// The batch folder in `home` recording `pitches` (of a pipeline file named like `pipeline`,
/// when several do): pods record the pipeline by its path in the image, so the folder is found
/// by what it holds, not by the id this machine would compute.
pub(crate) fn batch_of(home: &Path, pitches: &[Pitch], pipeline: &Path) -> Option<BatchDir> {
    let entries = std::fs::read_dir(home.join("batches")).ok()?;
    let mut matching: Vec<(BatchDir, bool)> = entries
        .flatten()
        .filter_map(|entry| BatchDir::open(entry.path()).ok())
        .filter(|(_, file)| file.pitches == pitches)
        .map(|(dir, file)| {
            let same_name = file.pipeline.file_name() == pipeline.file_name();
            (dir, same_name)
        })
        .collect();
    if matching.len() > 1 {
        matching.retain(|(_, same_name)| *same_name);
    }
    (matching.len() == 1).then(|| matching.remove(0).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(outcome: &str, session: bool) -> Row {
        Row {
            outcome: outcome.into(),
            session: session.then(|| "s".into()),
            note: None,
            ..Row::not_run(0, "p", "")
        }
    }

    fn attempt(exit_code: Option<u8>) -> AttemptRecord {
        AttemptRecord {
            exit_code,
            ..AttemptRecord::default()
        }
    }

    #[test]
    fn each_index_is_ran_retried_failed_killed_or_never_started() {
        let cases = [
            (row("fail", true), vec![attempt(Some(0))], "ran", Some(0)),
            (
                row("pass", true),
                vec![attempt(None), attempt(Some(0))],
                "retried",
                Some(0),
            ),
            (
                row("not run", false),
                vec![attempt(Some(2))],
                "failed",
                Some(2),
            ),
            (
                row("unfinished", true),
                vec![attempt(None), attempt(None)],
                "killed",
                None,
            ),
            (
                row("unfinished", true),
                vec![attempt(Some(1))],
                "failed",
                Some(1),
            ),
            (row("not run", false), vec![], "never started", None),
            // A session that ended is a result, whatever its last pod recorded.
            (row("pass", true), vec![attempt(None)], "ran", None),
        ];
        for (row, attempts, state, exit_code) in cases {
            let pods = pods(&row, &attempts);
            assert_eq!(pods.state, state, "{row:?} {attempts:?}");
            assert_eq!(pods.exit_code, exit_code);
            assert_eq!(pods.attempts as usize, attempts.len());
        }
    }
}
