//! The size limits a session's files must agree on, in one place: the largest goal crumb accepts
//! makes a session whose `meta.json` and `goal` line every reader opens. The compile-time checks
//! below fail the build if one limit outgrows what the next reader accepts.

use crate::pipeline::loader::MAX_FILE_BYTES as MAX_PIPELINE_BYTES;
use crate::transcript::writer::MAX_LINE_BYTES;

/// Largest goal (pitch) accepted, as UTF-8 text, from any source (argument, `--pitch-file`,
/// stdin, a batch's pitches, Studio).
pub(crate) const MAX_GOAL_BYTES: usize = 1024 * 1024;
/// Largest goal as a JSON string, escapes included: what `meta.json` and the `goal` event hold.
/// Twice the text, so any goal within [`MAX_GOAL_BYTES`] but for a few escapes fits.
pub(crate) const MAX_GOAL_JSON_BYTES: usize = 2 * MAX_GOAL_BYTES;
/// Largest `meta.json` read: the goal, the pipeline's name and roles (from a pipeline file of at
/// most [`MAX_PIPELINE_BYTES`]) and a few fixed fields.
pub(crate) const MAX_META_BYTES: u64 = 4 * 1024 * 1024;
/// Room for everything in a `meta.json` or a `goal` line besides the goal itself.
const ENVELOPE_BYTES: usize = 64 * 1024;

const _: () = assert!(
    (MAX_GOAL_JSON_BYTES + MAX_PIPELINE_BYTES + ENVELOPE_BYTES) as u64 <= MAX_META_BYTES,
    "the largest goal must make a meta.json crumb reads"
);
const _: () = assert!(
    MAX_GOAL_JSON_BYTES + ENVELOPE_BYTES <= MAX_LINE_BYTES,
    "the largest goal must make a goal line the writer appends"
);
const _: () = assert!(
    MAX_LINE_BYTES <= crate::transcript::framer::MAX_LINE_BYTES,
    "every line the writer appends must be one every reader reads"
);

/// Why `goal` cannot start a session, naming the limit it breaks.
pub(crate) fn goal_problem(goal: &str) -> Option<String> {
    if goal.len() > MAX_GOAL_BYTES {
        return Some(format!(
            "the goal is {} bytes; the limit is {MAX_GOAL_BYTES} bytes (1 MiB) — put the details in a file the agents read",
            goal.len()
        ));
    }
    let json = serde_json::to_string(goal).map_or(usize::MAX, |s| s.len());
    (json > MAX_GOAL_JSON_BYTES).then(|| {
        format!(
            "the goal is {json} bytes as JSON (control characters and quotes are escaped); the limit is {MAX_GOAL_JSON_BYTES} bytes"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_goal_is_accepted_and_one_byte_more_is_not() {
        assert_eq!(goal_problem(&"a".repeat(MAX_GOAL_BYTES)), None);
        let past = goal_problem(&"a".repeat(MAX_GOAL_BYTES + 1)).unwrap();
        assert!(past.contains("the limit is 1048576 bytes"), "{past}");
        let escaped = goal_problem(&"\u{1}".repeat(MAX_GOAL_JSON_BYTES / 6 + 1)).unwrap();
        assert!(escaped.contains("as JSON"), "{escaped}");
    }
}
