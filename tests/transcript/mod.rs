//! Integration tests: the transcript envelope, writer, reader, tail, schema and `crumb event`.
//!
//! Everything runs against real files in temporary directories and, for `crumb event`, the real
//! binary as a subprocess. The schema, tail and `crumb event` tests are the submodules in
//! `tests/transcript/`.

use std::fs;
use std::io::{BufReader, Write};
use std::path::Path;

use crumb::transcript::reader::{LineIssue, Reader};
use crumb::transcript::schema;
use crumb::transcript::tail::Tail;
use crumb::transcript::writer::{MAX_LINE_BYTES, WriteError, Writer};
use crumb::transcript::{
    ArtifactRef, ArtifactRole, Deviation, Dimension, Draft, Event, Kind, Metadata, ScoreSource,
    Scores, Step, Visibility,
};
use crumb::vocab::{Severity, Verdict};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::{Crumb, crumb, repo_root};

// ---------------------------------------------------------------------------------------------
// helpers

/// The events of a transcript, without the `agent.wake`s that [`event_cmd`] opens turns with.
fn read_file(path: &Path) -> (Vec<Event>, Vec<LineIssue>) {
    let file = fs::File::open(path).expect("open transcript");
    let mut events = Vec::new();
    let mut issues = Vec::new();
    for item in Reader::new(BufReader::new(file)) {
        match item {
            Ok(event)
                if opens_a_test_turn(
                    event.kind.as_str(),
                    event.data.as_ref().and_then(|d| d.get("capability")),
                ) => {}
            Ok(event) => events.push(event),
            Err(issue) => issues.push(issue),
        }
    }
    (events, issues)
}

/// Whether a line is an `agent.wake` naming a capability (what [`event_cmd`] writes first).
fn opens_a_test_turn(kind: &str, capability: Option<&Value>) -> bool {
    kind == "agent.wake" && capability.is_some_and(Value::is_string)
}

/// Every line as JSON, without the `agent.wake`s that [`event_cmd`] opens turns with.
fn raw_lines(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("every written line is JSON"))
        .filter(|line| {
            !opens_a_test_turn(
                line["kind"].as_str().unwrap_or_default(),
                line["data"].get("capability"),
            )
        })
        .collect()
}

fn data(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("data must be an object"),
    }
}

fn dim(score: f64, source: ScoreSource) -> Dimension {
    Dimension {
        score,
        source,
        lookup: None,
        evidence: Vec::new(),
    }
}

/// The authority record [`event_cmd`] gives a folder that has none: the roles these tests use.
const TEST_AUTHORITY: &str = r#"{"roles": {"builder": ["build"], "verifier": ["judge.score"], "planner-lead": ["spec"]}, "common": ["note", "agent.thought_summary"]}"#;

/// A `crumb event` invocation as a turn of `actor` in the folder holding `transcript` (session
/// `sess-1`): a real capability, and an authority record unless the test wrote its own.
fn event_cmd(transcript: &Path, actor: &str) -> crate::support::Crumb {
    let dir = transcript.parent().unwrap();
    if !dir.join("authority.json").exists() {
        fs::write(dir.join("authority.json"), TEST_AUTHORITY).unwrap();
    }
    let capability = crate::support::open_turn(dir, "sess-1", actor);
    crumb()
        .arg("event")
        .env("CRUMB_CAPABILITY", capability.token())
}

fn assert_increasing(ids: &[String]) {
    for pair in ids.windows(2) {
        assert!(
            pair[0] < pair[1],
            "ids not strictly increasing: {} then {}",
            pair[0],
            pair[1]
        );
    }
}

fn full_event(kind: Kind) -> Event {
    Draft::new("verifier", kind)
        .to("*")
        .parent("01JZ0000000000000000000001")
        .step(Step::Grader)
        .body("body text")
        .data(data(json!({"reason": "x", "nested": {"n": 1}})))
        .artifact(ArtifactRef {
            path: "artifacts/index.html".into(),
            sha256: "a".repeat(64),
            role: Some(ArtifactRole::Src),
        })
        .scores(Scores {
            d1: Some(Dimension {
                score: 4.0,
                source: ScoreSource::VerifierLlm,
                lookup: None,
                evidence: vec!["AC1".into()],
            }),
            d2: Some(Dimension {
                score: 5.0,
                source: ScoreSource::QaCheckEffect,
                lookup: Some("qa.result.exec_exit_code".into()),
                evidence: Vec::new(),
            }),
            d3: Some(dim(3.5, ScoreSource::ReducerAuto)),
            aggregate: Some(25.5),
            verdict: Some(Verdict::Partial),
            feedback: Some("tighten the loop".into()),
            suggested_change: Some("cap the frame rate".into()),
            deviation: Some(Deviation {
                kind: Severity::Minor,
            }),
            ..Scores::default()
        })
        .metadata(Metadata {
            visibility: Some(Visibility::Public),
            harness: Some("mock".into()),
            provider: Some("none".into()),
            model: Some("mock-1".into()),
            tokens_in: Some(10),
            tokens_out: Some(20),
            cost_usd: Some(0.01),
            latency_ms: Some(1200),
            effect_id: Some("01JZ0000000000000000000001:0".into()),
            consumed_intervene_ids: vec!["01JZ0000000000000000000001".into()],
            ..Metadata::default()
        })
        .into_event(
            "01JZ0000000000000000000002".into(),
            "2026-05-01T10:00:00.123Z".into(),
            "sess".into(),
        )
}

fn line(n: u32) -> String {
    format!(
        r#"{{"id":"01JZ00000000000000000000{n:02}","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"builder","kind":"note"}}"#
    )
}

fn append(path: &Path, text: &str) {
    fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// writer and reader

#[test]
fn writer_and_reader_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let mut writer = Writer::open(&path, "sess-1").unwrap();
    let mut written = Vec::new();
    for &kind in Kind::ALL {
        written.push(
            writer
                .append(minimal_draft(kind).body(format!("a {kind}")))
                .unwrap(),
        );
    }
    written.push(
        writer
            .append(full_event(Kind::JudgeScore).into_draft())
            .unwrap(),
    );
    let (read, issues) = read_file(&path);
    assert!(issues.is_empty(), "{issues:?}");
    assert_eq!(read, written);
    let ts = regex_like_ts();
    for event in &read {
        assert_eq!(event.session_id, "sess-1");
        assert!(
            ts(&event.ts),
            "ts {} is RFC 3339 UTC with milliseconds and Z",
            event.ts
        );
    }
    assert_increasing(&read.iter().map(|e| e.id.clone()).collect::<Vec<_>>());
}

/// The smallest valid draft of each kind (some kinds require a payload).
fn minimal_draft(kind: Kind) -> Draft {
    let draft = Draft::new("builder", kind);
    match kind {
        Kind::JudgeScore | Kind::VerifyResult => draft.scores(Scores {
            d1: Some(dim(3.0, ScoreSource::VerifierLlm)),
            ..Scores::default()
        }),
        Kind::QaResult => draft.data(data(json!({"exec_exit_code": 0}))),
        _ => draft,
    }
}

#[test]
fn writer_refuses_payloads_the_engine_would_have_to_guess() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let mut writer = Writer::open(&path, "s").unwrap();
    for (draft, at) in [
        (Draft::new("verifier", Kind::JudgeScore), "/scores"),
        (Draft::new("system", Kind::QaResult), "/data/exec_exit_code"),
        (
            Draft::new("system", Kind::QaResult).data(data(json!({"exec_exit_code": "0"}))),
            "/data/exec_exit_code",
        ),
    ] {
        let Err(WriteError::Invalid(violations)) = writer.append(draft) else {
            panic!("must be refused")
        };
        assert_eq!(violations.0[0].path, at);
    }
    assert_eq!(fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn crumb_explain_describes_event_kinds() {
    let run = crumb()
        .args(["explain", "session.awaiting"])
        .run()
        .expect_code(0);
    insta::assert_snapshot!("explain_session_awaiting", run.stdout);
    let run = crumb()
        .args(["explain", "judge.score"])
        .run()
        .expect_code(0);
    assert!(run.stdout.contains("scores"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("A role judges exactly when `judge.score` is in its `produces`."),
        "{}",
        run.stdout
    );
    for common in ["note", "agent.thought_summary"] {
        let run = crumb().args(["explain", common]).run().expect_code(0);
        assert!(
            run.stdout.contains("Authority: a common kind"),
            "{}",
            run.stdout
        );
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn regex_like_ts() -> impl Fn(&str) -> bool {
    |ts: &str| {
        let b = ts.as_bytes();
        b.len() == 24
            && b[10] == b'T'
            && b[19] == b'.'
            && b[23] == b'Z'
            && chrono::DateTime::parse_from_rfc3339(ts).is_ok()
    }
}

/// A later id within a day of the clock (a clock stepped back) is a floor; a maximal or far-future
/// id is not, and later ids come from the clock, below it (the writer's module docs).
#[test]
fn writer_ids_stay_above_a_nearly_current_id_and_go_on_after_a_maximal_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let now = ulid::Ulid::new().timestamp_ms();
    let soon = ulid::Ulid::from_parts(now + 3_600_000, 7).to_string();
    for (floor, above) in [(soon.as_str(), true), ("7ZZZZZZZZZZZZZZZZZZZZZZZZZ", false)] {
        let line = format!(
            r#"{{"id":"{floor}","ts":"2100-01-01T00:00:00.000Z","session_id":"s","from":"user","kind":"goal"}}"#
        );
        fs::write(&path, format!("{line}\n")).unwrap();
        let mut writer = Writer::open(&path, "s").unwrap();
        let first = writer.append(Draft::new("builder", Kind::Note)).unwrap();
        let second = writer.append(Draft::new("builder", Kind::Note)).unwrap();
        assert_eq!(
            first.id.as_str() > floor,
            above,
            "{floor} then {}",
            first.id
        );
        assert!(second.id > first.id, "{} then {}", first.id, second.id);
        let (events, issues) = read_file(&path);
        assert!(issues.is_empty() && events.len() == 3, "{issues:?}");
    }
}

/// A real short write: `crumb event` under a file size limit (`ulimit -f`, SIGXFSZ ignored) fails
/// part-way through its line with EFBIG, and the transcript is cut back to what it was.
#[test]
fn crumb_event_past_a_file_size_limit_leaves_no_half_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let mut writer = Writer::open(&path, "sess-1").unwrap();
    fs::write(dir.path().join("authority.json"), TEST_AUTHORITY).unwrap();
    let capability = crate::support::open_turn(dir.path(), "sess-1", "builder");
    while fs::metadata(&path).unwrap().len() < 900 {
        writer.append(Draft::new("builder", Kind::Note)).unwrap();
    }
    let before = fs::read(&path).unwrap();
    let body = "y".repeat(400);
    let run = Crumb::shell(r#"trap '' XFSZ; ulimit -f 2; exec "$CRUMB" event"#)
        .env("CRUMB_CAPABILITY", capability.token())
        .stdin(json!({"kind": "note", "body": body}).to_string())
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("File too large"), "{}", run.stderr);
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "nothing of the line is left"
    );
    event_cmd(&path, "builder")
        .stdin(r#"{"kind":"note"}"#)
        .run()
        .expect_code(0);
    let (_, issues) = read_file(&path);
    assert!(issues.is_empty(), "{issues:?}");
}

#[test]
fn writer_terminates_a_torn_line_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    fs::write(&path, "{\"id\":\"01JZ0000000000000000000001\",\"ts\":\"20").unwrap();
    let mut writer = Writer::open(&path, "s").unwrap();
    let event = writer.append(Draft::new("builder", Kind::Build)).unwrap();
    let (events, issues) = read_file(&path);
    assert_eq!(events, vec![event]);
    assert_eq!(issues.len(), 1);
    assert_eq!((issues[0].line, issues[0].byte_offset), (1, 0));
}

#[test]
fn writer_refuses_invalid_drafts_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let mut writer = Writer::open(&path, "s").unwrap();
    let out_of_range = Draft::new("verifier", Kind::JudgeScore).scores(Scores {
        d4: Some(dim(5.5, ScoreSource::VerifierLlm)),
        aggregate: Some(-1.0),
        ..Scores::default()
    });
    let Err(WriteError::Invalid(violations)) = writer.append(out_of_range) else {
        panic!("out-of-range scores must be refused")
    };
    let paths: Vec<&str> = violations.0.iter().map(|v| v.path.as_str()).collect();
    assert_eq!(paths, ["/scores/D4/score", "/scores/aggregate"]);
    let bad_actor = Draft::new("no spaces allowed", Kind::Note).to("also bad");
    let Err(WriteError::Invalid(violations)) = writer.append(bad_actor) else {
        panic!("bad actor names must be refused")
    };
    assert_eq!(
        violations
            .0
            .iter()
            .map(|v| v.path.as_str())
            .collect::<Vec<_>>(),
        ["/from", "/to"]
    );
    let huge = Draft::new("builder", Kind::Build).body("x".repeat(5 * 1024 * 1024));
    match writer.append(huge) {
        Err(WriteError::TooLarge { bytes, limit }) => {
            assert!(bytes > limit && limit == MAX_LINE_BYTES);
        }
        other => panic!("a 5 MB body must be refused, got {other:?}"),
    }
    assert_eq!(fs::metadata(&path).unwrap().len(), 0, "nothing written");
}

#[test]
fn reader_skips_and_reports_bad_lines_in_a_messy_transcript() {
    let path = repo_root().join("tests/fixtures/transcripts/messy.jsonl");
    let (events, issues) = read_file(&path);
    let ids: Vec<&str> = events.iter().map(|e| &e.id[22..]).collect();
    // `compile` (0003) is spelt like a kind a pipeline may declare: this reader has no pipeline,
    // so it reads the line; the folding readers skip it unless the session's pipeline declares it.
    assert_eq!(
        ids,
        ["0001", "0002", "0003", "0006"],
        "BOM + CRLF lines and the good line after the garbage are read"
    );
    let report: String = issues.iter().map(|i| i.to_string() + "\n").collect();
    insta::assert_snapshot!("reader_messy_issues", report);
    // Raw mode reads every line that is JSON at all, whatever its shape.
    let raw: Vec<Value> = Reader::raw(BufReader::new(fs::File::open(&path).unwrap()))
        .filter_map(Result::ok)
        .collect();
    assert_eq!(raw.len(), 6);
    assert_eq!(raw[2]["kind"], "compile");
}

#[test]
fn reader_survives_a_five_megabyte_line_written_by_someone_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let big = json!({"id":"01JZ0000000000000000000001","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"builder","kind":"build","body":"x".repeat(5 * 1024 * 1024)});
    let mut file = fs::File::create(&path).unwrap();
    writeln!(file, "{big}").unwrap();
    writeln!(file, r#"{{"id":"01JZ0000000000000000000002","ts":"2026-05-01T10:00:01.000Z","session_id":"s","from":"builder","kind":"note"}}"#).unwrap();
    drop(file);
    let (events, issues) = read_file(&path);
    assert!(issues.is_empty());
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[0].body.as_ref().map(String::len),
        Some(5 * 1024 * 1024)
    );
}

#[test]
fn reading_a_missing_file_is_an_empty_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let (events, issues) =
        crumb::transcript::reader::read_path(&dir.path().join("absent.jsonl")).unwrap();
    assert!(events.is_empty() && issues.is_empty());
}

// ---------------------------------------------------------------------------------------------
// crumb event

#[test]
fn crumb_event_appends_and_prints_id_and_ts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let run = event_cmd(&path, "builder")
        .env("CRUMB_HARNESS", "mock")
        .env("CRUMB_PROVIDER", "none")
        .env("CRUMB_MODEL", "mock-1")
        .stdin(r#"{"kind":"build","body":"build done","artifacts":[{"path":"artifacts/index.html","sha256":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","role":"src"}],"data":{"phaser_version":"3.80.1"}}"#)
        .run()
        .expect_code(0);
    let lines = raw_lines(&path);
    assert_eq!(lines.len(), 1);
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed, json!({"id": lines[0]["id"], "ts": lines[0]["ts"]}));
    insta::with_settings!({filters => vec![
        (r"[0-9A-HJKMNP-TV-Z]{26}", "[ULID]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "[TS]"),
    ]}, {
        insta::assert_snapshot!("crumb_event_stdout", run.stdout);
        insta::assert_snapshot!("crumb_event_line", format!("{}\n", lines[0]));
    });
    // The informational variables may be set, as the dispatcher sets them, when they agree with
    // the capability; `from` may be given explicitly.
    event_cmd(&path, "builder")
        .env("CRUMB_ACTOR", "builder")
        .env("CRUMB_SESSION_ID", "sess-1")
        .env("CRUMB_SESSION_DIR", dir.path())
        .env("CRUMB_TRANSCRIPT_PATH", &path)
        .stdin(r#"{"from":"builder","kind":"note","body":"hi","session_id":"sess-1"}"#)
        .run()
        .expect_code(0);
    let lines = raw_lines(&path);
    assert_eq!(lines.len(), 2);
    assert!(lines[0]["id"].as_str() < lines[1]["id"].as_str());
}

// ---------------------------------------------------------------------------------------------
// property tests

fn arb_line() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        (1u32..99).prop_map(|n| (line(n), true)),
        "[^\n]{0,80}".prop_map(|s| {
            let ok = serde_json::from_str::<Event>(&s).is_ok();
            (s, ok)
        }),
        Just(("{\"id\":\"01JZ".to_owned(), false)),
        Just(("\r".to_owned(), false)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reader_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let typed = Reader::new(&bytes[..]).count();
        let raw = Reader::raw(&bytes[..]).count();
        prop_assert!(typed <= bytes.len() + 1 && raw <= bytes.len() + 1);
    }

    #[test]
    fn reader_yields_exactly_the_valid_lines(lines in proptest::collection::vec(arb_line(), 0..40), crlf in any::<bool>()) {
        let sep = if crlf { "\r\n" } else { "\n" };
        let text: String = lines.iter().map(|(l, _)| l.clone() + sep).collect();
        let expected = lines.iter().filter(|(_, ok)| *ok).count();
        let events = Reader::new(text.as_bytes()).flatten().count();
        prop_assert_eq!(events, expected);
    }

    /// Appending a transcript in arbitrary chunks and polling after each gives the same items
    /// as reading the whole file.
    #[test]
    fn tail_over_chunks_equals_one_read(lines in proptest::collection::vec(arb_line(), 0..20), cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8)) {
        let text: String = lines.iter().map(|(l, _)| l.clone() + "\n").collect();
        let bytes = text.as_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.push(bytes.len());
        points.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        fs::write(&path, b"").unwrap();
        let mut tail = Tail::new(&path);
        let mut from_tail = Vec::new();
        let mut written = 0;
        for point in points {
            let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
            file.write_all(&bytes[written..point]).unwrap();
            written = point;
            let batch = tail.poll().unwrap();
            prop_assert!(!batch.truncated);
            from_tail.extend(batch.items);
        }
        let from_reader: Vec<_> = Reader::new(bytes).collect();
        prop_assert_eq!(from_tail, from_reader);
    }

    #[test]
    fn kind_parsing_round_trips_or_refuses(text in "\\PC{0,30}") {
        match text.parse::<Kind>() {
            Ok(kind) => prop_assert_eq!(kind.as_str(), text.as_str()),
            Err(err) => prop_assert!(err.to_string().starts_with("unknown event kind")),
        }
    }

    /// Whatever text an event carries (quotes, newlines, control characters, any Unicode), it is
    /// written as one line and read back unchanged.
    #[test]
    fn any_body_round_trips_through_writer_and_reader(bodies in proptest::collection::vec(any::<String>(), 1..8)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut writer = Writer::open(&path, "s").unwrap();
        let written: Vec<Event> = bodies.iter().map(|b| writer.append(Draft::new("builder", Kind::Note).body(b.clone())).unwrap()).collect();
        let text = fs::read_to_string(&path).unwrap();
        prop_assert_eq!(text.lines().count(), bodies.len());
        let (read, issues) = read_file(&path);
        prop_assert!(issues.is_empty());
        prop_assert_eq!(read, written);
    }

    #[test]
    fn drafts_parse_or_report_without_panicking(text in "\\PC{0,200}") {
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            let _ = crumb::transcript::validate::parse_draft(&value);
        }
    }
}

mod event_cmd;
mod json_schema;
mod tail;
