//! Opening a session to read it: the one way `crumb replay`, `crumb status`, `crumb run`/`resume`
//! (through the coordinator) and Studio get a session's table and fold its transcript.
//!
//! They used to compile the frozen pipeline with different options and report errors three ways,
//! and to read the transcript with different rules, so they could disagree about the same file.
//! Here the frozen pipeline compiles with [`READ_OPTIONS`] into one error type, the transcript is
//! read with the one line classification ([`Tolerant`]) and the one line limit
//! ([`MAX_LINE_BYTES`]), and every fold goes through [`Replay`] (which owns the duplicate-id rule).

use std::path::{Path, PathBuf};

use super::meta::MetaError;
use super::run_config::RunConfig;
use super::session::SessionDir;
use crate::engine::Replay;
use crate::engine::replay::Parsed;
use crate::engine::state::{State, clip};
use crate::pipeline::compile::{CompileOptions, Compiled, compile_file, compile_str};
use crate::pipeline::table::TransitionTable;
use crate::transcript::reader::{Reader, Tolerant};
use crate::transcript::tail::Tail;
use crate::transcript::{Event, Kind};

pub use crate::transcript::reader::MAX_LINE_BYTES;

/// How a frozen pipeline compiles. Templates are not checked: they were checked when the
/// pipeline was frozen, and a replay needs only the table (a broken template fails its spawn).
pub const READ_OPTIONS: CompileOptions = CompileOptions {
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
pub fn compile_frozen(path: &Path) -> Result<TransitionTable, OpenError> {
    table_of(
        compile_file(path, &READ_OPTIONS),
        path.display().to_string(),
    )
}

/// Compile a pipeline held in memory the same way (tests).
pub fn compile_source(source: &str, origin: &Path) -> Result<TransitionTable, OpenError> {
    table_of(
        compile_str(source, origin, &READ_OPTIONS),
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
pub fn fold_transcript(
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
    pub fn tail(&self) -> Tail<Tolerant> {
        Tail::resume(self.transcript(), 0, 0)
    }

    /// `{parent, at}` when this session is a fork (`crumb fork`), from its `session.start`.
    pub fn fork_origin(&self) -> Option<serde_json::Value> {
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
pub fn recorded_inputs(path: &Path) -> serde_json::Map<String, serde_json::Value> {
    first_session_start(path)
        .ok()
        .flatten()
        .and_then(|event| event.data?.get("inputs")?.as_object().cloned())
        .unwrap_or_default()
}

/// The pipeline name and hash the transcript's `session.start` recorded (`data.pipeline`,
/// `data.pipeline_hash`); `None` for a transcript that records no hash (a legacy one).
pub fn recorded_pipeline(path: &Path) -> Result<Option<(String, String)>, OpenError> {
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
                let _ = tailed.fold_line(&table, line, parsed);
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
