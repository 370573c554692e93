//! A point of a session: an event, the `artifacts/` tree as it was after it, and the verdict
//! that judged the build standing there. Without an event the point is the build the final
//! verdict judged (the final verdict's event), else the session's last event.

use crate::engine::State;
use crate::pipeline::table::TransitionTable;
use crate::runtime::artifact_store::tree::{Tree, tree_of};
use crate::runtime::fork::locate;
use crate::transcript::Event;

use super::manifest::Judged;

/// A session read for its points: its table, its events and its pipeline's hash.
pub(crate) struct Opened {
    pub table: TransitionTable,
    pub events: Vec<Event>,
    pub pipeline_hash: String,
}

/// Read `dir` with its frozen table.
pub(crate) fn open(dir: &crate::runtime::session_dir::SessionDir) -> Result<Opened, String> {
    let meta = dir.read_meta().map_err(|e| e.to_string())?;
    let table = crate::runtime::session_read::compile_frozen(&dir.frozen_pipeline(&meta))
        .map_err(|e| e.to_string())?;
    let (events, _) = crate::transcript::reader::read_path(&dir.transcript())
        .map_err(|e| format!("cannot read the transcript: {e}"))?;
    Ok(Opened {
        table,
        events,
        pipeline_hash: meta.pipeline_hash,
    })
}

/// The prefix every tree path has; a version's paths are relative to it.
pub(crate) const ARTIFACTS_PREFIX: &str = "artifacts/";

/// One point of a session.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub event_id: String,
    /// Path under `artifacts/` → sha256.
    pub tree: Tree,
    pub judged: Option<Judged>,
}

/// The point `at` (an event id or unique prefix; `None`: the final verdict's) of `events`.
/// The verdict that judged it is the first whose build is the build standing at the point.
pub(crate) fn point(
    table: &TransitionTable,
    events: &[Event],
    at: Option<&str>,
) -> Result<Point, String> {
    let ids: Vec<String> = events.iter().map(|e| e.id.clone()).collect();
    let wanted = match at {
        Some(reference) => Some(locate(&ids, reference).map_err(|e| e.to_string())?),
        None => None,
    };
    let mut state = State::new();
    let mut build_at_point = None;
    // (event index, the build it judged, the judged record) of every verdict.
    let mut verdicts = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let count = state.verification.count;
        state.apply(table, event);
        let build = state.build.as_ref().map(|b| b.event_id.clone());
        if state.verification.count > count
            && let Some(record) = &state.verification.latest
        {
            verdicts.push((i, build.clone(), judged_of(table, record)));
        }
        if wanted == Some(i) {
            build_at_point = build;
        }
    }
    let index = match (wanted, verdicts.last()) {
        (Some(i), _) => i,
        (None, Some((i, build, _))) => {
            build_at_point.clone_from(build);
            *i
        }
        (None, None) => events
            .len()
            .checked_sub(1)
            .ok_or("the session has no events")?,
    };
    let judged = verdicts
        .into_iter()
        .find(|(_, build, _)| build.is_some() && *build == build_at_point)
        .map(|(_, _, judged)| judged);
    let tree = tree_of(&events[..=index])
        .into_iter()
        .filter_map(|(path, sha)| Some((path.strip_prefix(ARTIFACTS_PREFIX)?.to_owned(), sha)))
        .collect();
    Ok(Point {
        event_id: events[index].id.clone(),
        tree,
        judged,
    })
}

fn judged_of(table: &TransitionTable, record: &crate::engine::state::VerdictRecord) -> Judged {
    Judged {
        event_id: record.event_id.clone(),
        verdict: record.corrected.verdict.as_str().to_owned(),
        severity: record.severity.as_str().to_owned(),
        aggregate: record.corrected.aggregate,
        scores: table
            .scoring
            .rubric
            .iter()
            .zip(&record.corrected.dimensions)
            .map(|(d, v)| (d.id.clone(), *v))
            .collect(),
    }
}
