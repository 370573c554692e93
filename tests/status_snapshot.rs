//! `crumb status` keeps a long session's folded state in `state.snapshot` and afterwards folds
//! only the appended lines; a snapshot that does not match the transcript is discarded (said with
//! `CRUMB_DEBUG`) and the result is always the full fold's.

use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Crumb, crumb};

/// Filler lines appended to a finished run, so it is long enough for a snapshot (> 10k lines).
const FILLER: u32 = 12_000;

struct Session {
    home: tempfile::TempDir,
    project: PathBuf,
    folder: PathBuf,
    id: String,
}

impl Session {
    /// A finished mock run of the static casual pipeline padded with [`FILLER`] notes.
    fn long() -> Session {
        Session::padded(&[], 0)
    }

    /// A mock run waiting for a person (PARTIAL) padded with [`FILLER`] notes.
    fn long_waiting() -> Session {
        Session::padded(&["--mock-scenario", "partial"], 10)
    }

    fn padded(extra: &[&str], code: i32) -> Session {
        let home = tempfile::tempdir().expect("tempdir");
        let project = home.path().join("project");
        crate::support::casual_static_project(&project);
        let mut session = Session {
            project,
            folder: PathBuf::new(),
            id: String::new(),
            home,
        };
        let run = session
            .crumb(&["run", "pipelines/casual-static.yaml", "a snake game"])
            .args(["--adapter", "mock", "--json"])
            .args(extra)
            .run()
            .expect_code(code);
        let summary: Value = serde_json::from_str(&run.stdout).expect("run summary");
        session.folder = PathBuf::from(summary["folder"].as_str().expect("folder"));
        session.id = summary["session_id"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_default();
        session.append(&(0..FILLER).map(|n| session.note(n)).collect::<Vec<_>>());
        session
    }

    fn crumb(&self, args: &[&str]) -> Crumb {
        crumb()
            .current_dir(&self.project)
            .env("CRUMB_HOME", self.home.path().join("home"))
            .env("CRUMB_DEBUG", "1")
            .args(args)
    }

    fn transcript(&self) -> PathBuf {
        self.folder.join("transcript.jsonl")
    }

    fn snapshot(&self) -> PathBuf {
        self.folder.join("state.snapshot")
    }

    /// A note with an id above every real one; its body is long runs of `x` (so an edit of one
    /// byte anywhere in the filler keeps the line valid JSON of the same length).
    fn note(&self, n: u32) -> String {
        format!(
            "{}\n",
            json!({
                "id": format!("7ZZZZZZZZZZZZZZZZZ{n:08}"),
                "ts": "2026-05-01T10:00:00.000Z",
                "session_id": self.id,
                "from": "system",
                "kind": "note",
                "body": format!("filler {n:08} {}", "x".repeat(200)),
            })
        )
    }

    /// An `agent.stop` of the builder reporting usage (what the usage block sums).
    fn stop(&self, n: u32) -> String {
        format!(
            "{}\n",
            json!({
                "id": format!("7ZZZZZZZZZZZZZZZZZ{n:08}"),
                "ts": "2026-05-01T10:00:01.000Z",
                "session_id": self.id,
                "from": "builder",
                "kind": "agent.stop",
                "body": "builder stopped",
                "metadata": { "tokens_in": 1000, "tokens_out": 250, "cost_usd": 0.125, "model": "m" },
            })
        )
    }

    fn append(&self, lines: &[String]) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.transcript())
            .expect("open transcript");
        file.write_all(lines.concat().as_bytes()).expect("append");
    }

    /// `crumb status` and `crumb status --json` of the session, and the debug lines of the first.
    fn status(&self) -> (String, Value, String) {
        let folder = self.folder.to_str().expect("utf-8 path");
        let text = self.crumb(&["status", folder]).run().expect_code(0);
        let json = self
            .crumb(&["status", "--json", folder])
            .run()
            .expect_code(0);
        let value = serde_json::from_str(&json.stdout).expect("status json");
        // The text run comes first, so its stderr says how the snapshot found was judged.
        (text.stdout, value, text.stderr)
    }

    /// What `status` says when it folds everything: the same call with the snapshot moved away
    /// (and then put back).
    fn full_status(&self) -> (String, Value) {
        let kept = self.folder.join("kept.snapshot");
        let had = std::fs::rename(self.snapshot(), &kept).is_ok();
        let folder = self.folder.to_str().expect("utf-8 path");
        let text = self.crumb(&["status", folder]).run().expect_code(0);
        let json = self
            .crumb(&["status", "--json", folder])
            .run()
            .expect_code(0);
        if had {
            std::fs::rename(&kept, self.snapshot()).expect("put back");
        }
        let value = serde_json::from_str(&json.stdout).expect("status json");
        (text.stdout, value)
    }

    fn prefix_offset(&self) -> u64 {
        let snapshot: Value =
            serde_json::from_slice(&std::fs::read(self.snapshot()).expect("snapshot"))
                .expect("json");
        snapshot["prefix"]["offset"].as_u64().expect("offset")
    }
}

/// Overwrite the `x` at or after `at` with `y`, in place (same file, same length).
fn bend_in_place(path: &Path, at: u64) {
    let bytes = std::fs::read(path).expect("read");
    let start = usize::try_from(at).expect("fits");
    let offset = bytes[start..]
        .iter()
        .position(|&b| b == b'x')
        .expect("an x after the position")
        + start;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    file.write_all_at(b"y", offset as u64).expect("write");
}

#[test]
fn status_folds_only_the_appended_lines_and_says_what_a_full_fold_says() {
    let session = Session::long();
    let (first_text, first_json, _) = session.status();
    assert!(
        session.snapshot().is_file(),
        "a long session gets a snapshot"
    );
    assert!(first_text.contains("usage"), "{first_text}");

    // Append usage, and a duplicate of a line the snapshot covers (the id window crosses the cut).
    let covered = session.note(FILLER - 1);
    session.append(&[
        session.stop(FILLER),
        covered,
        session.note(FILLER + 1),
        session.stop(FILLER + 2),
    ]);
    let (text, value, debug) = session.status();
    assert!(
        debug.contains(&format!(
            "used: folding from line {}",
            first_json["replay"]["lines"].as_u64().unwrap() + 1
        )),
        "{debug}"
    );
    assert_eq!(
        value["replay"]["skipped"],
        json!(1),
        "the duplicate is skipped"
    );
    let (full_text, full_value) = session.full_status();
    assert_eq!(text, full_text);
    assert_eq!(value, full_value);
    let builder = |text: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with("builder"))
            .map(str::to_owned)
    };
    assert_ne!(
        builder(&text),
        builder(&first_text),
        "the appended usage is summed"
    );
    assert!(
        text.contains(&format!("filler {:08}", FILLER + 1)),
        "{text}"
    );
}

#[test]
fn a_short_session_gets_no_snapshot() {
    let session = Session::long();
    std::fs::write(
        session.transcript(),
        std::fs::read_to_string(session.transcript())
            .expect("read")
            .split_inclusive('\n')
            .take(20)
            .collect::<String>(),
    )
    .expect("shorten");
    session.status();
    assert!(!session.snapshot().exists());
}

/// Each way the covered prefix can change is caught, and status then says what a full fold says.
#[test]
fn a_snapshot_whose_prefix_changed_is_discarded() {
    type Bend = fn(&Session);
    let bends: [(&str, Bend, &str); 6] = [
        (
            "first line rewritten in place",
            |s| {
                // The first filler line lies within the first 64 KiB: the head is hashed.
                let text = std::fs::read_to_string(s.transcript()).expect("read");
                let at = text.find("filler 00000000").expect("filler") as u64;
                bend_in_place(&s.transcript(), at);
            },
            "first bytes changed",
        ),
        (
            "last covered line rewritten in place",
            |s| bend_in_place(&s.transcript(), s.prefix_offset() - 150),
            "first bytes changed",
        ),
        (
            "a sampled block in the middle rewritten in place",
            |s| {
                let offset = s.prefix_offset();
                bend_in_place(&s.transcript(), (offset - 4096) / 63 * 31);
            },
            "first bytes changed",
        ),
        (
            "the same bytes in another file",
            |s| {
                let copy = s.folder.join("copy.jsonl");
                std::fs::copy(s.transcript(), &copy).expect("copy");
                std::fs::rename(&copy, s.transcript()).expect("replace");
            },
            "another file",
        ),
        (
            "truncated",
            |s| {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(s.transcript())
                    .expect("open");
                file.set_len(s.prefix_offset() / 2).expect("truncate");
            },
            "shorter",
        ),
        (
            "a garbled snapshot",
            |s| std::fs::write(s.snapshot(), b"{\"format\":1,").expect("garble"),
            "unreadable",
        ),
    ];
    for (what, bend, why) in bends {
        let session = Session::long();
        session.status();
        assert!(session.snapshot().is_file(), "{what}");
        bend(&session);
        let (text, value, debug) = session.status();
        assert!(debug.contains(why), "{what}: {debug}");
        assert!(!debug.contains("used: folding"), "{what}: {debug}");
        let (full_text, full_value) = session.full_status();
        assert_eq!(text, full_text, "{what}");
        assert_eq!(value, full_value, "{what}");
    }
}

#[test]
fn a_snapshot_of_another_version_or_table_is_discarded() {
    let session = Session::long();
    session.status();
    for (key, value, why) in [
        (
            "crumb_version",
            json!("0.0.0-other"),
            "written by crumb 0.0.0-other",
        ),
        ("table_digest", json!("feed"), "another pipeline table"),
        ("format", json!(999), "format 999"),
    ] {
        let mut snapshot: Value =
            serde_json::from_slice(&std::fs::read(session.snapshot()).expect("snapshot"))
                .expect("json");
        let original = snapshot.clone();
        snapshot[key] = value;
        std::fs::write(session.snapshot(), snapshot.to_string()).expect("write");
        let (_, _, debug) = session.status();
        assert!(debug.contains(why), "{key}: {debug}");
        std::fs::write(session.snapshot(), original.to_string()).expect("restore");
    }
}

/// A coordinator that ends a long session leaves its snapshot up to date: the next `status` folds
/// nothing but what the snapshot covers.
#[test]
fn a_coordinator_that_ends_a_long_session_writes_its_snapshot() {
    let session = Session::long_waiting();
    session
        .crumb(&["say", session.id.as_str(), "/approve"])
        .run()
        .expect_code(0);
    session
        .crumb(&["resume", session.id.as_str()])
        .run()
        .expect_code(0);
    assert!(
        session.snapshot().is_file(),
        "the ending coordinator wrote it"
    );
    let lines = std::fs::read_to_string(session.transcript())
        .expect("read")
        .lines()
        .count();
    let (text, value, debug) = session.status();
    assert!(
        debug.contains(&format!("used: folding from line {}", lines + 1)),
        "{debug}"
    );
    let (full_text, full_value) = session.full_status();
    assert_eq!(text, full_text);
    assert_eq!(value, full_value);
}
