//! Finding sessions and summarising them for the list: `meta.json` plus a bounded read of the
//! transcript's end, never the whole history (the list stays cheap however long sessions grow).

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::outcome::{Context, Outcome, outcome};
use super::watched_session::WatchedSession;
use crate::home::CrumbHome;
use crate::runtime::listing::{SessionSummary, list};
use crate::runtime::session_dir::{SessionDir, TRANSCRIPT_FILE};
use crate::transcript::Event;
use crate::transcript::reader::each_event;
use crate::transcript::validate::is_ulid;

/// Transcripts up to this size are folded while a list row is built; longer ones in the
/// background.
const FOLD_IN_LIST_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes read from the end of a transcript for a list row.
const TAIL_BYTES: u64 = 16 * 1024;

/// One row of the session list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SessionRow {
    #[serde(flatten)]
    pub summary: SessionSummary,
    /// Transcript size in bytes.
    pub bytes: u64,
    /// The latest verdict, when one is within the transcript's last few KiB.
    pub verdict: Option<String>,
    pub aggregate: Option<f64>,
    /// `engine` when the reducer's corrected values are known, else `claimed` (the verifier's).
    pub verdict_source: Option<&'static str>,
    /// Kind and time of the last event.
    pub last_kind: Option<String>,
    pub last_ts: Option<String>,
    /// Events, when the session is being watched (otherwise unknown without reading it all).
    pub events: Option<usize>,
    /// Some role was swapped to another adapter (known when watched, else from the tail).
    pub degraded: bool,
    /// The outcome in words, the same as the session view's (from the engine's fold).
    pub outcome: Option<Outcome>,
}

/// The sessions Studio knows, and the hubs of those being watched.
#[derive(Default)]
pub(crate) struct Registry {
    paths: Mutex<HashMap<String, PathBuf>>,
    hubs: Mutex<HashMap<String, Arc<WatchedSession>>>,
}

impl Registry {
    /// The directory of session `id` under `home`, if it exists.
    pub(crate) fn locate(&self, home: &CrumbHome, id: &str) -> Option<SessionDir> {
        if !is_ulid(id) {
            return None;
        }
        let known = self
            .paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned();
        if let Some(path) = known
            && let Ok(dir) = SessionDir::open(path)
        {
            return Some(dir);
        }
        let projects = std::fs::read_dir(home.projects_dir()).ok()?;
        for project in projects.flatten() {
            let path = project.path().join("sessions").join(id);
            if let Ok(dir) = SessionDir::open(path.clone()) {
                self.paths
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.to_owned(), path);
                return Some(dir);
            }
        }
        None
    }

    /// The hub of session `id`, opened on first use. A session whose folder is gone (deleted
    /// while Studio watched it) is forgotten, so it answers 404 like one that never was; one
    /// that reappears is found again.
    pub(crate) fn hub(&self, home: &CrumbHome, id: &str) -> Option<Arc<WatchedSession>> {
        if let Some(hub) = self.open_hub(id) {
            return Some(hub);
        }
        let dir = self.locate(home, id)?;
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        let hub = hubs
            .entry(id.to_owned())
            .or_insert_with(|| Arc::new(WatchedSession::open(dir)));
        Some(Arc::clone(hub))
    }

    /// The hub of a listed session, opened from its known path.
    pub(crate) fn hub_for(&self, summary: &SessionSummary) -> Option<Arc<WatchedSession>> {
        if let Some(hub) = self.open_hub(&summary.id) {
            return Some(hub);
        }
        let dir = SessionDir::open(summary.path.clone()).ok()?;
        self.paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(summary.id.clone(), summary.path.clone());
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        let hub = hubs
            .entry(summary.id.clone())
            .or_insert_with(|| Arc::new(WatchedSession::open(dir)));
        Some(Arc::clone(hub))
    }

    /// A hub already open, without opening one; `None` (and forgotten) when its folder is gone.
    pub(crate) fn open_hub(&self, id: &str) -> Option<Arc<WatchedSession>> {
        let mut hubs = self.hubs.lock().unwrap_or_else(PoisonError::into_inner);
        let hub = hubs.get(id).cloned()?;
        if SessionDir::open(hub.dir().path()).is_ok() {
            return Some(hub);
        }
        hubs.remove(id);
        drop(hubs);
        self.paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        None
    }
}

/// Every session under `home`, newest first (meta only).
pub(crate) fn all(home: &CrumbHome) -> Vec<SessionSummary> {
    list(home, None).0
}

/// A list row for `summary`: the meta fields plus what the transcript's end says.
pub(crate) fn row(summary: SessionSummary, registry: &Registry) -> SessionRow {
    let transcript = summary.path.join(TRANSCRIPT_FILE);
    let (bytes, tail) = tail_events(&transcript);
    let mut row = SessionRow {
        bytes,
        verdict: None,
        aggregate: None,
        verdict_source: None,
        last_kind: tail.last().map(|e| e.kind.as_str().to_owned()),
        last_ts: tail.last().map(|e| e.ts.clone()),
        events: None,
        degraded: tail.iter().any(is_swap),
        outcome: None,
        summary,
    };
    if let Some(judge) = tail.iter().rev().find(|e| e.kind.as_str() == "judge.score")
        && let Some(scores) = &judge.scores
    {
        row.verdict = scores.verdict.map(|v| v.as_str().to_owned());
        row.aggregate = scores.aggregate;
        row.verdict_source = Some("claimed");
    }
    // The engine's view from the start: the fold is incremental and kept, so a listed session
    // is read in full once and then only its appends. A long one is folded in the background
    // (its row says what the tail says until then, and the list stream sends the update).
    if let Some(hub) = registry.hub_for(&row.summary) {
        if row.bytes <= FOLD_IN_LIST_BYTES {
            let _ = hub.fold();
        } else {
            hub.fold_in_background();
        }
        if let Some(inner) = hub.try_lock().filter(|inner| inner.folded) {
            row.events = Some(inner.index.len());
            row.degraded = inner.replay.state.degraded();
            if let Some(latest) = &inner.replay.state.verification.latest {
                row.verdict = Some(latest.corrected.verdict.as_str().to_owned());
                row.aggregate = Some(latest.corrected.aggregate);
                row.verdict_source = Some("engine");
            }
            let live = crate::runtime::lock::is_held(&row.summary.path);
            row.outcome = Some(session_outcome(&inner, row.summary.status, live));
        }
    }
    row
}

/// The outcome of a watched session (list row and session view alike).
pub(crate) fn session_outcome(
    inner: &super::watched_session::Inner,
    status: &str,
    live: bool,
) -> Outcome {
    let turn = inner.live_turn.as_ref();
    let ctx = Context {
        status,
        live,
        limits: inner.table.as_ref().map(|t| &t.limits),
        running: turn.map(|t| (t.role.as_str(), t.since.as_str())),
    };
    let mut out = outcome(&inner.replay.state, &ctx);
    // Without its frozen pipeline nothing was folded: say that rather than guess from nothing.
    if let Some(error) = &inner.table_error {
        out.kind = "error";
        out.tone = "bad";
        "Unreadable".clone_into(&mut out.title);
        out.detail = format!("the session's frozen pipeline cannot be read: {error}");
        out.action = None;
    }
    out
}

/// An adapter swap: the circuit breaker's audit, or the ack of a person's `/swap`.
fn is_swap(event: &Event) -> bool {
    let data = event.data.as_ref();
    match event.kind.as_str() {
        "audit" => data
            .and_then(|d| d.get("event"))
            .is_some_and(|e| e == "adapter_swapped"),
        "ack" => event
            .body
            .as_deref()
            .is_some_and(|b| b.starts_with("swapped ")),
        _ => false,
    }
}

/// The transcript's size and the events in its last [`TAIL_BYTES`] (first partial line dropped),
/// read with the rules every reader shares ([`each_event`]: legacy lines mapped, torn lines and
/// duplicates skipped).
fn tail_events(path: &Path) -> (u64, Vec<Event>) {
    let Ok(mut file) = std::fs::File::open(path) else {
        return (0, Vec::new());
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(TAIL_BYTES);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return (len, Vec::new());
    }
    let mut buf = Vec::new();
    if file.take(TAIL_BYTES).read_to_end(&mut buf).is_err() {
        return (len, Vec::new());
    }
    let mut text: &[u8] = &buf;
    if start > 0 {
        match text.iter().position(|&b| b == b'\n') {
            Some(newline) => text = &text[newline + 1..],
            None => return (len, Vec::new()),
        }
    }
    let mut events = Vec::new();
    each_event(text, |event| events.push(event), |_| {});
    (len, events)
}
