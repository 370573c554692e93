//! The goal of `crumb run`: from the command line, a file (`--pitch-file`) or stdin (`-`), read
//! with a bound; and the warning when it is longer than prompts quote.

use std::io::Read;
use std::path::Path;

use serde_json::json;

use crate::cli::error::CommandError;
use crate::engine::state::MAX_TEXT;
use crate::runtime::session_dir::SessionDir;
use crate::transcript::writer::Writer;
use crate::transcript::{Draft, Kind, Metadata};

/// The largest goal crumb reads: far above what prompts quote, low enough to refuse a wrong file
/// (the session's own limit, `runtime::limits`).
pub(super) const MAX_PITCH_BYTES: u64 = crate::runtime::limits::MAX_GOAL_BYTES as u64;

/// Where the goal comes from.
pub(super) enum Source<'a> {
    Text(&'a str),
    File(&'a Path),
    Stdin,
}

/// The goal text, trailing whitespace trimmed; `Err` is a usage message.
pub(super) fn read(source: &Source<'_>) -> Result<String, String> {
    let (what, bytes) = match source {
        Source::Text(text) => return Ok((*text).to_owned()),
        Source::File(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| format!("cannot read --pitch-file {}: {e}", path.display()))?;
            let what = format!("--pitch-file {}", path.display());
            (what.clone(), bounded(file, &what)?)
        }
        Source::Stdin => (
            "the pitch on stdin".to_owned(),
            bounded(std::io::stdin().lock(), "stdin")?,
        ),
    };
    let text = String::from_utf8(bytes).map_err(|_| format!("{what} is not valid UTF-8"))?;
    Ok(text.trim_end().to_owned())
}

/// Read at most [`MAX_PITCH_BYTES`] + 1 bytes, refusing more.
fn bounded(reader: impl Read, what: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_PITCH_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {what}: {e}"))?;
    if bytes.len() as u64 > MAX_PITCH_BYTES {
        return Err(format!(
            "the pitch from {what} is larger than {} KiB; shorten it",
            MAX_PITCH_BYTES / 1024
        ));
    }
    Ok(bytes)
}

/// The warning for a goal longer than prompts quote, if it is.
pub(super) fn too_long(pitch: &str) -> Option<String> {
    (pitch.len() > MAX_TEXT).then(|| {
        format!(
            "the goal is {} bytes; prompts quote only its first {} KiB, so {{{{ goal }}}} is cut there (the transcript keeps it whole) — shorten it, or put the details in a file the agents read; --pitch-file PATH or - (stdin) pass a long goal without the shell",
            pitch.len(),
            MAX_TEXT / 1024
        )
    })
}

/// Warn on stderr and record a `goal_truncated` hook in the transcript when the goal is too long.
pub(crate) fn warn_if_too_long(dir: &SessionDir, pitch: &str) -> Result<(), CommandError> {
    let Some(warning) = too_long(pitch) else {
        return Ok(());
    };
    eprintln!("crumb run: warning: {warning}");
    let Ok(serde_json::Value::Object(data)) = serde_json::to_value(json!({
        "hook": "goal_truncated",
        "bytes": pitch.len(),
        "limit": MAX_TEXT,
    })) else {
        return Err(CommandError::failure("cannot record the goal warning"));
    };
    let metadata = Metadata {
        deterministic: Some(true),
        tool: Some("crumb-run@v1".into()),
        ..Metadata::default()
    };
    Writer::open(dir.transcript(), dir.id())
        .and_then(|mut writer| {
            writer.append(
                Draft::new("system", Kind::Hook)
                    .body(warning)
                    .data(data)
                    .metadata(metadata),
            )
        })
        .map(|_| ())
        .map_err(CommandError::failure_from)
}
