//! One watched session: its line index, the reducer's state folded incrementally, the count of
//! each route taken, and a change signal every live stream listens to.
//!
//! Nothing is ever re-read from the start unless the file was replaced: each refresh indexes the
//! appended lines, and each fold reads the appended lines with the folding readers' tail
//! ([`SessionDir::tail`]: the same line rules and limit as `crumb replay` and the coordinator, not
//! the index's, which keeps only real events for paging) into the kept [`Replay`]. Streams are woken through a
//! `watch` channel carrying the number of indexed events and read the new lines themselves, so a
//! slow client can never make the others wait and reconnecting clients never see duplicates.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use super::index::LineIndex;
use super::view_snapshot::{self, LiveTurn, ViewSnapshot};
use crate::engine::Replay;
use crate::engine::fold_snapshot::FoldSnapshot;
use crate::engine::replay::Parsed;
use crate::engine::story::StoryFold;
use crate::pipeline::table::TransitionTable;
use crate::pipeline::triggers::{GOAL_KIND, JUDGE_SCORE_KIND, QA_RESULT_KIND};
use crate::runtime::session_dir::SessionDir;
use crate::runtime::state_snapshot;
use crate::runtime::story::observe;
use crate::transcript::Event;
use crate::transcript::reader::{LineIssue, Tolerant};
use crate::transcript::tail::Tail;

/// What a stream learns from the hub: how many events are indexed, and in which generation (the
/// generation changes when the file was replaced and the index restarted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Progress {
    pub generation: u64,
    pub events: usize,
}

/// A watched session.
pub struct WatchedSession {
    dir: SessionDir,
    inner: Mutex<Inner>,
    progress: watch::Sender<Progress>,
    polling: AtomicBool,
    /// A background fold (for the list) is under way.
    background: AtomicBool,
}

/// The mutable part of a hub.
pub struct Inner {
    pub index: LineIndex,
    pub replay: Replay,
    pub table: Option<Arc<TransitionTable>>,
    /// Why there is no table (the frozen pipeline did not compile or is missing).
    pub table_error: Option<String>,
    /// `(route index, source node id)` → times taken.
    pub route_counts: BTreeMap<(usize, String), u64>,
    pub generation: u64,
    /// The turn that is live: started (`agent.wake`) and not stopped yet.
    pub live_turn: Option<LiveTurn>,
    /// Session time spent waiting for a person, in finished waits (ms).
    pub waited_ms: i64,
    /// When the current wait for a person began (ms since the epoch), if one is open.
    pub waiting_since_ms: Option<i64>,
    /// Σ `cost_usd` the adapters reported on `agent.stop`, and how many turns reported one.
    pub cost_usd: f64,
    pub costed_turns: u32,
    /// The rounds, observed while folding (Studio's story line).
    pub story: StoryFold,
    /// Some fold has read the transcript to its end (the state means something).
    pub folded: bool,
    /// Reads the lines not folded into `replay` yet (the index may be ahead: paging needs no
    /// fold).
    fold_tail: Tail<Tolerant>,
    /// `(offset, lines)` the last [`view_snapshot`] read or written covers.
    snapshot_at: (u64, u64),
    /// The first fold looked for a [`view_snapshot`] already.
    snapshot_tried: bool,
}

impl WatchedSession {
    /// Watch the session in `dir`; compiles its frozen pipeline once.
    pub fn open(dir: SessionDir) -> WatchedSession {
        let (table, table_error) = match dir.table() {
            Ok(table) => (Some(Arc::new(table)), None),
            Err(err) => (None, Some(err.to_string())),
        };
        let index = LineIndex::new(dir.transcript());
        let fold_tail = dir.tail();
        let (progress, _) = watch::channel(Progress::default());
        WatchedSession {
            dir,
            inner: Mutex::new(Inner {
                index,
                replay: Replay::new(),
                table,
                table_error,
                route_counts: BTreeMap::new(),
                generation: 0,
                live_turn: None,
                waited_ms: 0,
                waiting_since_ms: None,
                cost_usd: 0.0,
                costed_turns: 0,
                story: StoryFold::new(),
                folded: false,
                fold_tail,
                snapshot_at: (0, 0),
                snapshot_tried: false,
            }),
            progress,
            polling: AtomicBool::new(false),
            background: AtomicBool::new(false),
        }
    }

    pub(crate) fn dir(&self) -> &SessionDir {
        &self.dir
    }

    /// Lock the state (a poisoned lock is still usable: every update is completed or redone).
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state, unless a fold holds it right now (the list never waits for a long fold).
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, Inner>> {
        match self.inner.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Fold on a thread of its own (once at a time): how the list gets a long session's state
    /// without making its request wait.
    pub(crate) fn fold_in_background(self: &Arc<Self>) {
        if self.background.swap(true, Ordering::AcqRel) {
            return;
        }
        let hub = Arc::clone(self);
        std::thread::spawn(move || {
            let _ = hub.fold();
            hub.background.store(false, Ordering::Release);
        });
    }

    /// Listen for new events.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    /// Index whatever was appended and wake the streams if anything was. The reducer state is
    /// brought up to date separately ([`WatchedSession::fold`]), so paging a huge session never waits for it.
    pub(crate) fn refresh(&self) -> std::io::Result<Progress> {
        let mut inner = self.lock();
        let extension = inner.index.extend()?;
        if extension.truncated {
            inner.generation += 1;
            inner.forget_fold();
            inner.fold_tail = self.dir.tail();
        }
        let progress = Progress {
            generation: inner.generation,
            events: inner.index.len(),
        };
        drop(inner);
        self.progress.send_if_modified(|current| {
            let changed = *current != progress;
            *current = progress;
            changed
        });
        Ok(progress)
    }

    /// Index, then fold every line not folded yet into the reducer state: the first fold goes on
    /// from the session's [`view_snapshot`] when it is valid, and a fold that read enough lines
    /// past the last snapshot writes the next one.
    pub fn fold(&self) -> std::io::Result<()> {
        self.refresh()?;
        let mut inner = self.lock();
        let transcript = self.dir.transcript();
        if !inner.snapshot_tried {
            inner.snapshot_tried = true;
            inner.resume_from_snapshot(&transcript);
        }
        loop {
            let batch = inner.fold_tail.poll()?;
            if batch.truncated {
                inner.forget_fold();
            }
            for (line, item) in batch.lines.into_iter().zip(batch.items) {
                inner.fold_line(line, item);
            }
            if !batch.more {
                inner.folded = true;
                let (offset, lines) = (inner.fold_tail.offset(), inner.fold_tail.lines());
                let (at, at_lines) = inner.snapshot_at;
                if state_snapshot::worth_keeping(
                    offset.saturating_sub(at),
                    lines.saturating_sub(at_lines),
                ) {
                    inner.save_snapshot(&transcript);
                }
                return Ok(());
            }
        }
    }

    /// Keep refreshing every `interval` while anyone listens. Idempotent.
    pub(crate) fn ensure_polling(self: &Arc<Self>, interval: Duration) {
        if self.polling.swap(true, Ordering::AcqRel) {
            return;
        }
        let hub = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let refreshed = Arc::clone(&hub);
                let _ = tokio::task::spawn_blocking(move || refreshed.refresh()).await;
                if hub.progress.receiver_count() == 0 {
                    hub.polling.store(false, Ordering::Release);
                    // A listener that arrived between the check and the store restarts us.
                    if hub.progress.receiver_count() == 0
                        || hub.polling.swap(true, Ordering::AcqRel)
                    {
                        break;
                    }
                }
            }
        });
    }
}

impl Inner {
    /// Go on from the session's [`view_snapshot`] when one is valid and nothing is folded yet.
    fn resume_from_snapshot(&mut self, transcript: &std::path::Path) {
        let Some(table) = self.table.clone() else {
            return;
        };
        if self.fold_tail.offset() != 0 || self.replay.stats.lines != 0 {
            return;
        }
        let digest = state_snapshot::table_digest(&table);
        let Some(snapshot) = view_snapshot::load(transcript, &digest) else {
            return;
        };
        let Some(replay) = snapshot.fold.into_replay() else {
            return;
        };
        let prefix = snapshot.prefix;
        self.replay = replay;
        self.story = snapshot.story;
        self.route_counts = snapshot
            .route_counts
            .into_iter()
            .map(|(index, node, count)| ((index, node), count))
            .collect();
        self.live_turn = snapshot.live_turn;
        self.waited_ms = snapshot.waited_ms;
        self.waiting_since_ms = snapshot.waiting_since_ms;
        self.cost_usd = f64::from_bits(snapshot.cost_usd_bits);
        self.costed_turns = snapshot.costed_turns;
        self.fold_tail = Tail::resume(transcript, prefix.offset, prefix.lines);
        self.snapshot_at = (prefix.offset, prefix.lines);
    }

    /// Write the [`view_snapshot`] of what is folded (a failure is only said with `CRUMB_DEBUG`:
    /// the snapshot is a cache).
    pub(crate) fn save_snapshot(&mut self, transcript: &std::path::Path) {
        let Some(table) = self.table.clone() else {
            return;
        };
        let (offset, lines) = (self.fold_tail.offset(), self.fold_tail.lines());
        let written = view_snapshot::prefix(transcript, offset, lines).and_then(|prefix| {
            view_snapshot::save(
                transcript,
                &ViewSnapshot {
                    format: view_snapshot::FORMAT,
                    crumb_version: env!("CARGO_PKG_VERSION").to_owned(),
                    table_digest: state_snapshot::table_digest(&table),
                    prefix,
                    fold: FoldSnapshot::of(&self.replay),
                    story: self.story.clone(),
                    route_counts: self
                        .route_counts
                        .iter()
                        .map(|((index, node), count)| (*index, node.clone(), *count))
                        .collect(),
                    live_turn: self.live_turn.clone(),
                    waited_ms: self.waited_ms,
                    waiting_since_ms: self.waiting_since_ms,
                    cost_usd_bits: self.cost_usd.to_bits(),
                    costed_turns: self.costed_turns,
                },
            )
        });
        match written {
            Ok(()) => self.snapshot_at = (offset, lines),
            Err(err) => state_snapshot::debug(&format!(
                "no Studio snapshot written for {}: {err}",
                transcript.display()
            )),
        }
    }

    /// Start the fold over (the file was replaced).
    fn forget_fold(&mut self) {
        self.replay = Replay::new();
        self.story = StoryFold::new();
        self.route_counts.clear();
        self.live_turn = None;
        self.waited_ms = 0;
        self.waiting_since_ms = None;
        self.cost_usd = 0.0;
        self.costed_turns = 0;
        self.snapshot_at = (0, 0);
    }

    /// Fold line `line_no` into the state and count the route it takes.
    fn fold_line(&mut self, line_no: u64, item: Result<Parsed, LineIssue>) {
        let Some(table) = self.table.clone() else {
            return;
        };
        let parsed = item.unwrap_or_else(|issue| Parsed::Skip(issue.message));
        let folded = observe(&mut self.story, &mut self.replay, &table, line_no, parsed);
        if let Some(event) = folded {
            if let Some(key) = self.route_taken(&table, &event) {
                *self.route_counts.entry(key).or_default() += 1;
            }
            self.note_turn(&event);
        }
        self.note_wait();
    }

    /// Track the live turn: `agent.wake` starts one, `agent.stop` (or the end) ends it.
    fn note_turn(&mut self, event: &Event) {
        match event.kind.as_str() {
            "agent.wake" => {
                let log = event
                    .data
                    .as_ref()
                    .and_then(|d| d.get("log"))
                    .and_then(|l| l.as_str())
                    .map(str::to_owned);
                self.live_turn = Some(LiveTurn {
                    role: event.from.clone(),
                    since: event.ts.clone(),
                    log,
                });
            }
            "agent.stop" => {
                self.live_turn = None;
                if let Some(cost) = event.metadata.as_ref().and_then(|m| m.cost_usd)
                    && cost.is_finite()
                {
                    self.cost_usd += cost;
                    self.costed_turns += 1;
                }
            }
            "done" | "session.end" => self.live_turn = None,
            _ => {}
        }
    }

    /// Session time spent waiting for a person is kept apart from working time.
    fn note_wait(&mut self) {
        let state = &self.replay.state;
        let now = state.clock.latest_ms;
        match (state.awaiting.is_some(), self.waiting_since_ms) {
            (true, None) => self.waiting_since_ms = now,
            (false, Some(since)) => {
                self.waited_ms += now.unwrap_or(since).saturating_sub(since).max(0);
                self.waiting_since_ms = None;
            }
            _ => {}
        }
    }

    /// The route an event took, keyed by its index and the graph node it leaves from.
    fn route_taken(&self, table: &TransitionTable, event: &Event) -> Option<(usize, String)> {
        let kind = event.kind.as_str();
        if kind == JUDGE_SCORE_KIND {
            let latest = self.replay.state.verification.latest.as_ref()?;
            if latest.event_id != event.id {
                return None;
            }
            // As the reducer: a kind route on `judge.score` from this judge first, else the verdict's.
            let route = table
                .route_for(kind, &event.from)
                .or_else(|| table.route_for_verdict(latest.corrected.verdict, latest.severity))?;
            return Some((route.index, role_node(&event.from)));
        }
        let route = table.route_for(kind, &event.from)?;
        let source = if kind == GOAL_KIND {
            "goal".to_owned()
        } else if kind == QA_RESULT_KIND && !table.is_role(&event.from) {
            "qa".to_owned()
        } else if table.is_role(&event.from) {
            role_node(&event.from)
        } else {
            format!("event_{}", safe_id(kind))
        };
        Some((route.index, source))
    }
}

/// Graph node id of a role (the scheme `crumb graph` uses).
pub(crate) fn role_node(role: &str) -> String {
    format!("role_{}", safe_id(role))
}

/// `crumb graph`'s node-id escaping: anything but ASCII alphanumerics becomes `_`.
pub(crate) fn safe_id(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::WatchedSession;
    use crate::engine::Replay;
    use crate::home::{CrumbHome, Project};
    use crate::runtime::session;
    use crate::transcript::framer::{Frame, FramedInput};

    fn repo(path: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    /// Everything the session view shows of the fold, as JSON.
    fn view_of(hub: &WatchedSession) -> serde_json::Value {
        let inner = hub.lock();
        serde_json::json!({
            "state": inner.replay.state,
            "stats": inner.replay.stats,
            "story": inner.story,
            "routes": inner.route_counts.iter().map(|((i, n), c)| (i, n, c)).collect::<Vec<_>>(),
            "live_turn": inner.live_turn,
            "waited_ms": inner.waited_ms,
            "waiting_since_ms": inner.waiting_since_ms,
            "cost_bits": inner.cost_usd.to_bits(),
            "costed_turns": inner.costed_turns,
        })
    }

    /// Opening a session from its `studio.snapshot` (taken after any line) and folding the rest
    /// shows what a fold of the whole transcript shows, and a stale snapshot is not used.
    #[test]
    fn a_fold_from_the_snapshot_equals_the_whole_fold() {
        for name in ["mock-run-1.jsonl", "real-01KQQ40DCPNGHF54P2BJKP10MH.jsonl"] {
            let transcript = std::fs::read(repo("tests/fixtures/transcripts/legacy").join(name))
                .expect("legacy transcript");
            let tmp = tempfile::tempdir().expect("tempdir");
            let project = Project::containing(tmp.path()).expect("project");
            let home = CrumbHome::at(tmp.path().join("home"));
            let created = session::create(&home, &project, &repo("pipelines/casual.yaml"), "g")
                .expect("session");
            let path = created.dir.transcript();
            std::fs::write(&path, &transcript).expect("write transcript");
            let whole = WatchedSession::open(created.dir.clone());
            whole.fold().expect("fold");
            let expected = view_of(&whole);
            let ends: Vec<usize> = transcript
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1)
                .collect();
            let step = (ends.len() / 12).max(1);
            for (n, &end) in ends.iter().enumerate().step_by(step) {
                std::fs::write(&path, &transcript[..end]).expect("prefix");
                let first = WatchedSession::open(created.dir.clone());
                first.fold().expect("fold the prefix");
                first.lock().save_snapshot(&path);
                // Appended in place (the same file): the snapshot still holds.
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .expect("open");
                std::io::Write::write_all(&mut file, &transcript[end..]).expect("append");
                drop(file);
                let resumed = WatchedSession::open(created.dir.clone());
                resumed.fold().expect("fold the rest");
                assert_eq!(
                    resumed.lock().snapshot_at.1,
                    n as u64 + 1,
                    "{name}: resumed at the cut"
                );
                assert_eq!(
                    view_of(&resumed),
                    expected,
                    "{name}: cut after line {}",
                    n + 1
                );
            }
            // A transcript rewritten through a new file is another file: the snapshot is not used.
            let copy = path.with_extension("new");
            std::fs::write(&copy, &transcript).expect("copy");
            std::fs::rename(&copy, &path).expect("rename");
            let fresh = WatchedSession::open(created.dir.clone());
            fresh.fold().expect("fold");
            assert_eq!(
                fresh.lock().snapshot_at,
                (0, 0),
                "{name}: stale snapshot discarded"
            );
            assert_eq!(view_of(&fresh), expected, "{name}");
        }
    }

    /// Studio folds a session exactly as `crumb replay` does, legacy shapes included (two of the
    /// legacy transcripts keep verdict scores under `data.scores`).
    #[test]
    fn studio_state_matches_replay_on_the_legacy_transcripts() {
        for name in [
            "mock-run-1.jsonl",
            "real-01KQMS9E5M1Z7TEF32E81YXAGT.jsonl",
            "real-01KQQ40DCPNGHF54P2BJKP10MH.jsonl",
        ] {
            let transcript = std::fs::read(repo("tests/fixtures/transcripts/legacy").join(name))
                .expect("legacy transcript");
            let tmp = tempfile::tempdir().expect("tempdir");
            let project = Project::containing(tmp.path()).expect("project");
            let home = CrumbHome::at(tmp.path().join("home"));
            let created = session::create(&home, &project, &repo("pipelines/casual.yaml"), "g")
                .expect("session");
            std::fs::write(created.dir.transcript(), &transcript).expect("write transcript");

            let hub = WatchedSession::open(created.dir.clone());
            hub.fold().expect("fold");
            let table = hub
                .lock()
                .table
                .clone()
                .expect("the frozen casual pipeline compiles");
            let mut replay = Replay::new();
            let mut framed = FramedInput::new(transcript.as_slice());
            while let Some(frames) = framed.next_frames().expect("in memory") {
                for frame in frames.iter() {
                    if let Frame::Line { line, bytes, .. } = frame {
                        replay.fold_line(&table, line, bytes);
                    }
                }
            }
            assert_eq!(
                serde_json::to_value(&hub.lock().replay.state).expect("state"),
                serde_json::to_value(&replay.state).expect("state"),
                "{name}"
            );
        }
    }
}
