//! Opening a session to read it: the one way `crumb replay`, `crumb status`, `crumb run`/`resume`
//! (through the coordinator) and Studio get a session's table and fold its transcript.
//!
//! They used to compile the frozen pipeline with different options and report errors three ways,
//! and to read the transcript with different rules, so they could disagree about the same file.
//! Here the frozen pipeline compiles with [`READ_OPTIONS`] into one error type, the transcript is
//! read with the one line classification ([`Tolerant`]) and the one line limit
//! ([`crate::transcript::framer::MAX_LINE_BYTES`]), and every fold goes through [`Replay`] (which owns the duplicate-id rule).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;

use super::meta::MetaError;
use super::run_config::RunConfig;
use super::session_dir::SessionDir;
use super::state_snapshot::{self, Snapshot};
use crate::adapters::Usage;
use crate::engine::Replay;
use crate::engine::fold_snapshot::FoldSnapshot;
use crate::engine::replay::Parsed;
use crate::engine::state::{EventSummary, State, clip};
use crate::fs::recorded_reads::RecordedReads;
use crate::pipeline::compile::{CompileOptions, Compiled, compile_file};
use crate::pipeline::source::SourceFiles;
use crate::pipeline::table::TransitionTable;
use crate::transcript::reader::{Reader, Tolerant};
use crate::transcript::tail::Tail;
use crate::transcript::{Event, Kind};

/// How a frozen pipeline compiles. Templates are not checked: they were checked when the
/// pipeline was frozen, and a replay needs only the table (a broken template fails its spawn).
pub(crate) const READ_OPTIONS: CompileOptions = CompileOptions {
    check_templates: false,
};

/// How many compile errors an [`OpenError::Compile`] quotes.
const QUOTED_ERRORS: usize = 5;

/// A session's table or transcript could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error("{origin} is not a valid pipeline: {errors}")]
    Compile { origin: String, errors: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Compile the pipeline at `path` as a frozen copy is compiled.
pub(crate) fn compile_frozen(path: &Path) -> Result<TransitionTable, OpenError> {
    compile_frozen_recording(path).map(|(table, _)| table)
}

/// [`compile_frozen`], with the real paths of the files the compile read (what freezing copies).
pub(crate) fn compile_frozen_recording(
    path: &Path,
) -> Result<(TransitionTable, Vec<PathBuf>), OpenError> {
    let files = RecordedReads::shared();
    let shared: Arc<dyn SourceFiles> = files.clone();
    let table = table_of(
        compile_file(path, &READ_OPTIONS, &shared),
        path.display().to_string(),
    )?;
    Ok((table, files.paths()))
}

/// Compile a pipeline held in memory the same way (tests).
#[cfg(test)]
pub(crate) fn compile_source(source: &str, origin: &Path) -> Result<TransitionTable, OpenError> {
    table_of(
        crate::pipeline::compile::compile_str(
            source,
            origin,
            &READ_OPTIONS,
            &crate::fs::real_files(),
        ),
        origin.display().to_string(),
    )
}

fn table_of(compiled: Compiled, origin: String) -> Result<TransitionTable, OpenError> {
    if let Some(table) = compiled.table {
        return Ok(table);
    }
    let errors: Vec<String> = compiled
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .take(QUOTED_ERRORS)
        .map(|d| format!("{}: {}", d.code, clip(&d.message, 300)))
        .collect();
    Err(OpenError::Compile {
        origin,
        errors: errors.join("; "),
    })
}

/// Fold the transcript at `path` with the chunked parallel reader, calling `after` with the state
/// after each folded event.
pub(crate) fn fold_transcript(
    path: &Path,
    table: &TransitionTable,
    after: impl FnMut(&State),
) -> Result<Replay, OpenError> {
    let read_error = |source| OpenError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut replay = Replay::new();
    crate::transcript::chunked::fold(file, table, &mut replay, after).map_err(read_error)?;
    Ok(replay)
}

/// A fold of a transcript that started from its [`state_snapshot`] when one was valid.
pub(crate) struct ResumedFold {
    pub replay: Replay,
    /// The latest folded events, oldest first (the snapshot's, then the new ones), at most `keep`.
    pub recent: VecDeque<EventSummary>,
    pub resume: Resume,
}

/// Where a [`ResumedFold`] started and ended, for saving its snapshot.
pub(crate) struct Resume {
    /// The snapshot the fold started from.
    pub from: Option<Snapshot>,
    /// The transcript, open: what was folded is its first `end` bytes.
    pub file: File,
    pub end: u64,
    /// `end` is at a line boundary (the file ended with a newline), so a snapshot may cover it.
    pub whole_lines: bool,
    /// [`state_snapshot::table_digest`] of the table folded with.
    pub table_digest: String,
}

/// Fold the transcript at `path` through `table`, from its snapshot when that is valid (see
/// [`state_snapshot`]), else from its start, keeping the last `keep` folded events. Writes nothing:
/// the caller decides whether the result is worth a new snapshot ([`Resume::save`]).
pub(crate) fn fold_resuming(
    path: &Path,
    table: &TransitionTable,
    keep: usize,
) -> Result<ResumedFold, OpenError> {
    let read_error = |source| OpenError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let end = file.metadata().map_err(read_error)?.len();
    let table_digest = state_snapshot::table_digest(table);
    let mut from = state_snapshot::load(path, &file, end, &table_digest);
    let resumed = from.as_ref().and_then(|snapshot| {
        let replay = snapshot.fold.clone().into_replay();
        if replay.is_none() {
            state_snapshot::debug("snapshot not used (its id window is inconsistent)");
        }
        replay.map(|replay| (replay, snapshot.prefix.clone(), snapshot.recent.clone()))
    });
    let (mut replay, start, first_line, mut recent) =
        if let Some((replay, prefix, recent)) = resumed {
            (
                replay,
                prefix.offset,
                prefix.lines + 1,
                VecDeque::from(recent),
            )
        } else {
            from = None;
            (Replay::new(), 0, 1, VecDeque::new())
        };
    while recent.len() > keep {
        recent.pop_front();
    }
    let mut last = [0u8; 1];
    let whole_lines =
        end == 0 || (file.read_exact_at(&mut last, end - 1).is_ok() && last[0] == b'\n');
    let mut input = &file;
    input.seek(SeekFrom::Start(start)).map_err(read_error)?;
    let after = |state: &State| note_recent(&mut recent, keep, state);
    crate::transcript::chunked::fold_from(
        input.take(end - start),
        first_line,
        table,
        &mut replay,
        after,
    )
    .map_err(read_error)?;
    Ok(ResumedFold {
        replay,
        recent,
        resume: Resume {
            from,
            file,
            end,
            whole_lines,
            table_digest,
        },
    })
}

/// Keep the last `keep` folded events.
fn note_recent(recent: &mut VecDeque<EventSummary>, keep: usize, state: &State) {
    if keep > 0
        && let Some(last) = &state.last_event
    {
        if recent.len() == keep {
            recent.pop_front();
        }
        recent.push_back(last.clone());
    }
}

impl Resume {
    /// Write the snapshot of `replay` (which folded this resume's bytes, `recent` its last
    /// events) next to `path` when the transcript is long enough to be worth one, ends with a
    /// whole line, and the fold covers more than the snapshot it started from. `usage` is each
    /// role's usage over the same bytes. A failure is only said by [`state_snapshot::debug`]: the
    /// snapshot is a cache.
    pub(crate) fn save(
        &self,
        path: &Path,
        replay: &Replay,
        recent: &VecDeque<EventSummary>,
        usage: IndexMap<String, Usage>,
    ) {
        let lines = replay.stats.lines;
        let advanced = self
            .from
            .as_ref()
            .is_none_or(|s| s.prefix.offset < self.end);
        if !self.whole_lines || !advanced || !state_snapshot::worth_keeping(self.end, lines) {
            return;
        }
        let written = state_snapshot::prefix_of(&self.file, self.end, lines).and_then(|prefix| {
            let snapshot = Snapshot {
                format: state_snapshot::FORMAT,
                crumb_version: env!("CARGO_PKG_VERSION").to_owned(),
                table_digest: self.table_digest.clone(),
                prefix,
                fold: FoldSnapshot::of(replay),
                recent: state_snapshot::keep_recent(recent),
                usage,
            };
            state_snapshot::save(path, &snapshot)
        });
        if let Err(err) = written {
            state_snapshot::debug(&format!(
                "no snapshot written for {}: {err}",
                path.display()
            ));
        }
    }
}

impl SessionDir {
    /// The session's frozen pipeline, compiled.
    pub fn table(&self) -> Result<TransitionTable, OpenError> {
        let meta = self.read_meta()?;
        compile_frozen(&self.frozen_pipeline(&meta))
    }

    /// The whole transcript folded through `table` (`crumb replay`, `crumb status`).
    pub fn fold(
        &self,
        table: &TransitionTable,
        after: impl FnMut(&State),
    ) -> Result<Replay, OpenError> {
        fold_transcript(&self.transcript(), table, after)
    }

    /// A live reader of the transcript from its start, with the folding readers' rules (the
    /// coordinator and Studio fold what it yields through a [`Replay`]).
    pub(crate) fn tail(&self) -> Tail<Tolerant> {
        Tail::resume(self.transcript(), 0, 0)
    }

    /// `{parent, at}` when this session is a fork (`crumb fork`), from its `session.start`.
    pub(crate) fn fork_origin(&self) -> Option<serde_json::Value> {
        let start = first_session_start(&self.transcript()).ok()??;
        start.data?.get("fork").cloned()
    }

    /// The run configuration recorded in the first readable `session.start`, if any.
    pub fn run_config(&self) -> Result<Option<RunConfig>, OpenError> {
        let start = first_session_start(&self.transcript())?;
        Ok(start.and_then(|event| RunConfig::from_events([&event])))
    }
}

/// The first readable `session.start` of the transcript at `path`, if any.
fn first_session_start(path: &Path) -> Result<Option<Event>, OpenError> {
    let file = std::fs::File::open(path).map_err(|source| OpenError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = Reader::tolerant(std::io::BufReader::with_capacity(64 * 1024, file));
    Ok(reader
        .filter_map(Result::ok)
        .find_map(|parsed| match parsed {
            Parsed::Event(event) | Parsed::Mapped(event, _) if event.kind == Kind::SessionStart => {
                Some(event)
            }
            _ => None,
        }))
}

/// The inputs the transcript's `session.start` recorded (`data.inputs`), empty when none.
pub(crate) fn recorded_inputs(path: &Path) -> serde_json::Map<String, serde_json::Value> {
    first_session_start(path)
        .ok()
        .flatten()
        .and_then(|event| event.data?.get("inputs")?.as_object().cloned())
        .unwrap_or_default()
}

/// Whether the transcript's `session.start` marks a dry run (`data.dry_run`).
pub(crate) fn recorded_dry_run(path: &Path) -> bool {
    first_session_start(path)
        .ok()
        .flatten()
        .and_then(|event| event.data?.get("dry_run")?.as_bool())
        .unwrap_or(false)
}

/// The pipeline name and hash the transcript's `session.start` recorded (`data.pipeline`,
/// `data.pipeline_hash`); `None` for a transcript that records no hash (a legacy one).
pub(crate) fn recorded_pipeline(path: &Path) -> Result<Option<(String, String)>, OpenError> {
    let start = first_session_start(path)?;
    let field = |data: &serde_json::Map<String, serde_json::Value>, key: &str| {
        data.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    Ok(start.and_then(|event| {
        let data = event.data.as_ref()?;
        let hash = field(data, "pipeline_hash")?;
        Some((field(data, "pipeline").unwrap_or_default(), hash))
    }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{compile_source, fold_transcript};
    use crate::engine::Replay;
    use crate::transcript::reader::Tolerant;
    use crate::transcript::tail::Tail;

    /// One line of a bent transcript: good events with ids from a small set (so duplicates and
    /// out-of-order ids happen), and the damage the readers must agree on.
    fn arb_line() -> impl Strategy<Value = String> {
        let event = |id: u8, extra: &str| {
            format!(
                r#"{{"id":"01JZ00000000000000000000{id:02}","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"system","kind":"note","body":"b"{extra}}}"#
            )
        };
        (0u8..12, 0u8..9).prop_map(move |(id, bend)| match bend {
            0 => event(id, ""),
            1 => event(id, "").replace("2026-05-01T10", "yesterday"),
            2 => event(id, "").replace("01JZ", "01jz"),
            3 => event(id, r#","colour":"red""#),
            4 => event(id, "").replace(r#""system""#, r#""not a name!""#),
            5 => event(id, "")[..40].to_owned(),
            6 => format!("{}\r", event(id, "")),
            7 => "   ".to_owned(),
            _ => format!("\u{feff}{}", event(id, "")),
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The chunked reader (`crumb replay`, `crumb status`) and the tail (the coordinator,
        /// Studio) fold any bent transcript to the same state and skip the same lines.
        #[test]
        fn the_chunked_reader_and_the_tail_fold_the_same(
            lines in prop::collection::vec(arb_line(), 0..40),
            bom: bool,
        ) {
            let table = compile_source(
                include_str!("../../tests/fixtures/run/casual-static.yaml"),
                std::path::Path::new("casual-static.yaml"),
            )
            .expect("casual-static compiles");
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("transcript.jsonl");
            let mut text = if bom { "\u{feff}".to_owned() } else { String::new() };
            for line in &lines {
                text.push_str(line);
                text.push('\n');
            }
            std::fs::write(&path, &text).expect("write");

            let chunked = fold_transcript(&path, &table, |_| {}).expect("fold");
            let mut tailed = Replay::new();
            let mut tail: Tail<Tolerant> = Tail::resume(&path, 0, 0);
            let batch = tail.poll().expect("poll");
            for (line, item) in batch.lines.into_iter().zip(batch.items) {
                let parsed = item.unwrap_or_else(|issue| crate::engine::replay::Parsed::Skip(issue.message));
                let _ = tailed.fold_parsed(&table, line, parsed);
            }
            prop_assert_eq!(
                serde_json::to_value(&chunked.state).expect("state"),
                serde_json::to_value(&tailed.state).expect("state")
            );
            prop_assert_eq!(&chunked.stats.skipped_lines, &tailed.stats.skipped_lines);
            prop_assert_eq!(chunked.stats.events, tailed.stats.events);
            prop_assert_eq!(chunked.stats.mapped, tailed.stats.mapped);
        }
    }
}
