//! Storage faults are never outcomes. Every write crumb makes to a session past a file size limit
//! (`ulimit -f`, SIGXFSZ ignored: each write past it fails with EFBIG, as a full disk fails with
//! ENOSPC) — the transcript, meta, prompts, logs, the agents' own `crumb event`s — at a spread of
//! points through the run: the run exits 1 naming the cause, leaves every line whole, and
//! `crumb resume` without the limit reaches the outcome the unfaulted run reaches.

use super::*;
use crate::support::Crumb;

/// Bytes per `ulimit -f` block (dash and bash in POSIX mode count 512).
const BLOCK: u64 = 512;

impl Scratch {
    /// The mock run of `scenario` with every file limited to `blocks` × 512 bytes.
    fn run_limited(&self, scenario: &str, blocks: u64) -> Run {
        let script = format!(r#"trap '' XFSZ; ulimit -f {blocks}; exec "$CRUMB" run "$@""#);
        let mut run = Crumb::shell(&script)
            .arg("sh")
            .arg(self.pipeline())
            .arg(PITCH)
            .args(["--adapter", "mock", "--json", "--mock-scenario", scenario])
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.home())
            .env("CRUMB_STUDIO_PORT", "1");
        run = run.timeout(Duration::from_secs(120));
        run.run()
    }
}

#[test]
fn a_write_that_fails_anywhere_in_a_run_never_changes_its_outcome() {
    let unfaulted = Scratch::new();
    let reference = summary(&unfaulted.run("pass", &[]).expect_code(0));
    let session = unfaulted.session();
    let size = std::fs::metadata(session.join("transcript.jsonl"))
        .unwrap()
        .len();
    // A session is created whole or not at all: limits below its frozen pipeline fail before
    // it exists. From just past that to just before the transcript's last line.
    let floor = largest_file(&session.join("pipeline")).max(1);
    assert!(
        floor < size,
        "the frozen pipeline ({floor}) outgrows the transcript ({size})"
    );
    let mut faulted = 0;
    for step in 1..=6 {
        let bytes = floor + (size - floor) * step / 7;
        let blocks = bytes.div_ceil(BLOCK);
        let percent = bytes * 100 / size;
        let scratch = Scratch::new();
        let run = scratch.run_limited("pass", blocks);
        let what = format!("limit {blocks} blocks ({percent}% of {size} bytes)");
        if run.code == 0 {
            // The limit fell on no write this run made.
            continue;
        }
        assert_eq!(run.code, 1, "{what}: {}", run.stderr);
        faulted += 1;
        assert!(
            run.stderr.contains("a write to the session failed")
                && run.stderr.contains("KiB free")
                && run.stderr.contains("crumb resume"),
            "{what}: {}",
            run.stderr
        );
        let session = scratch.session();
        let resumed = summary(&scratch.resume(&session));
        assert_eq!(resumed["reason"], reference["reason"], "{what}");
        assert_eq!(resumed["outcome"], reference["outcome"], "{what}");
        let events = transcript(&session);
        assert_eq!(of_kind(&events, "done").len(), 1, "{what}");
        assert_eq!(
            of_kind(&events, "error").len(),
            0,
            "{what}: no turn was counted as failed: {:?}",
            of_kind(&events, "error")
        );
    }
    assert!(faulted >= 5, "only {faulted} of 6 limits fell on a write");
}

/// The size of the largest file under `dir`.
fn largest_file(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                largest_file(&path)
            } else {
                entry.metadata().map_or(0, |m| m.len())
            }
        })
        .max()
        .unwrap_or(0)
}
