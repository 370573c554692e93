//! Property tests: arbitrary event sequences never panic the reducer, and it is deterministic.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::testkit::{Script, casual, data, event, scores};
use crate::transcript::{Event, Kind, Metadata};
use crate::vocab::{Severity, Verdict};

fn actor() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "user",
        "system",
        "coordinator",
        "validator",
        "planner-lead",
        "builder",
        "verifier",
        "researcher",
    ])
    .prop_map(str::to_owned)
}

fn payload() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!({"exec_exit_code": 0})),
        Just(json!({"exec_exit_code": "zero", "ac_results": [{"status": "FAIL"}, 7, null]})),
        Just(json!({"acceptance_criteria": "one string", "ac_predicates": [1, {"id": "x"}]})),
        Just(json!({"goto": "builder", "append": "hi"})),
        Just(json!({"swap": {"from": "builder", "to": "mock"}})),
        Just(json!({"swap": "nonsense"})),
        Just(json!({"cancel": "all", "reset_circuit": true})),
        Just(json!({"ask": "status"})),
        Just(json!({"ask": ["not", "a", "string"]})),
        Just(json!({"actor": "verifier"})),
        Just(json!({"role": "builder", "reason": "timeout"})),
        Just(json!({"reason": "done here"})),
        any::<String>().prop_map(|s| json!({ "goto": s })),
    ]
}

/// kind index, from, data, body, tokens, ts offset, (verdict, severity, score) of a judge.score.
type EventSpec = (
    usize,
    String,
    Value,
    Option<String>,
    Option<u64>,
    i64,
    Option<(u8, u8, u8)>,
);

fn arbitrary_event() -> impl Strategy<Value = EventSpec> {
    (
        0..Kind::ALL.len(),
        actor(),
        payload(),
        proptest::option::of(".{0,40}"),
        proptest::option::of(0u64..400_000),
        -10_000_000i64..10_000_000,
        proptest::option::of((0u8..4, 0u8..3, 0u8..12)),
    )
}

fn build(n: u32, spec: EventSpec) -> Event {
    let (kind, from, payload, body, tokens, offset, judged) = spec;
    let mut e = event(n, &from, Kind::ALL[kind]);
    e.ts = super::testkit::ts_ms(offset);
    e.body = body;
    if let Value::Object(_) = payload {
        e.data = Some(data(payload));
    }
    e.metadata = tokens.map(|t| {
        Box::new(Metadata {
            tokens_out: Some(t),
            ..Metadata::default()
        })
    });
    if let Some((verdict, severity, score)) = judged {
        let s = f64::from(score) - 3.0;
        e.scores = Some(Box::new(scores(
            [s; 6],
            Verdict::ALL[usize::from(verdict)],
            Some(Severity::ALL[usize::from(severity)]),
            Some("p"),
        )));
    }
    e
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_sequences_never_panic_and_reduce_deterministically(specs in prop::collection::vec(arbitrary_event(), 0..60)) {
        let events: Vec<Event> = specs.into_iter().enumerate().map(|(i, s)| build(u32::try_from(i).unwrap_or(0), s)).collect();
        let mut first = Script::new();
        let mut second = Script::with(casual());
        for event in &events {
            let a = first.feed(event);
            let b = second.feed(event);
            prop_assert_eq!(a, b);
        }
        prop_assert_eq!(
            serde_json::to_string(&first.state).expect("serialises"),
            serde_json::to_string(&second.state).expect("serialises")
        );
    }

    #[test]
    fn effect_ids_are_unique_and_prefixed_by_the_event(specs in prop::collection::vec(arbitrary_event(), 1..40)) {
        let mut script = Script::new();
        for (i, spec) in specs.into_iter().enumerate() {
            let event = build(u32::try_from(i).unwrap_or(0), spec);
            let effects = script.feed(&event);
            let mut ids: Vec<&str> = effects.iter().map(super::Effect::id).collect();
            let prefix = format!("{}:", event.id);
            prop_assert!(ids.iter().all(|id| id.starts_with(&prefix)));
            ids.sort_unstable();
            ids.dedup();
            prop_assert_eq!(ids.len(), effects.len());
        }
    }
}

/// A transcript line for `event`, bent in one of the ways real files are.
fn line_for(event: &Event, bend: u8, cut: usize) -> Vec<u8> {
    let line = serde_json::to_string(event).expect("serialises");
    let text = match bend {
        0 => format!("{line}\r"),
        1 => format!("\u{feff}{line}"),
        2 => line.replacen('{', r#"{"data":{"n":1e400},"#, 1),
        3 => line.replacen('{', r#"{"data":[1],"#, 1),
        4 => line.replacen('{', r#"{"unknown":1,"#, 1),
        5 => line.replacen('{', r#"{"body":"tab\tand \"quotes\" \u00e9","#, 1),
        6 => return line.as_bytes()[..cut.min(line.len())].to_vec(),
        8 => line.replacen(
            '{',
            r#"{"data":{"scores":{"aggregate":20,"verdict":"PASS"}},"#,
            1,
        ),
        9 => line.replacen('{', r#"{"artifacts":null,"#, 1),
        10 => line.replacen('{', r#"{"metadata":{"tokens_in":-1},"#, 1),
        11 => line.replacen(
            '{',
            r#"{"scores":null,"data":{"scores":{"D1":{"score":4}}}},"#,
            1,
        ),
        7 => line.replacen(
            '}',
            r#","data":{"deep":[[{"a":null}]],"k":-0.5e-3,"s":"\n"}}"#,
            1,
        ),
        // The reference's verdict shape, which the fast path maps itself, and its near misses.
        12 => line.replacen(
            '{',
            r#"{"scores":{"D1":{"score":4.5,"source":"verifier-llm","evidence":["AC-1 ✓"]},"D2":{"score":5,"source":"qa-check-effect","lookup":"qa.result.exec_exit_code"},"D3":{"score":4,"source":"verifier-llm","semantic":4},"D6":{"score":4.5,"source":"qa-check-effect","lookup":"x"},"aggregate":28,"verdict":"PASS","courteval":{"grader_msg_id":"g"},"audit_violations":[]},"#,
            1,
        ),
        13 => line.replacen(
            '{',
            r#"{"to":null,"scores":{"D1":{"score":4,"source":"verifier-llm","x":1}},"#,
            1,
        ),
        14 => line.replacen(
            '{',
            r#"{"artifacts":[{"path":"a","sha256":"abc"}],"scores":{"D1":{"score":4,"source":"verifier-llm","x":1}},"#,
            1,
        ),
        15 => line.replacen(
            '{',
            r#"{"scores":{"D1":{"score":4,"source":"hybrid","x":1},"D2":{"value":3,"source":"verifier-llm"},"deviation":null},"#,
            1,
        ),
        16 => line.replacen(
            '{',
            r#"{"metadata":{"tokens_in":5,"tokens_out":7,"tool":"t\u00e9","cost_usd":0.125,"deterministic":true,"visibility":"private","audit_violations":["a"],"turn":null},"#,
            1,
        ),
        17 => line.replacen(
            '{',
            r#"{"metadata":{"tokens_in":1.0,"provider":"p"},"#,
            1,
        ),
        18 => {
            // Nesting around serde_json's limit of 128.
            let depth = 124 + cut % 6;
            let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            line.replacen('{', &format!("{{\"data\":{{\"d\":{deep}}},"), 1)
        }
        19 => line.replacen(
            '{',
            r#"{"scores":{"dims":{"X":{"score":1,"source":"verifier-llm"}},"D1":{"score":2,"source":"verifier-llm","y":[1]}},"#,
            1,
        ),
        20 => line.replacen(
            '{',
            r#"{"scores":{"D1":{"score":2,"source":"verifier-llm","y":[1e400]},"D4":{"score":-0,"source":"reducer-auto"}},"#,
            1,
        ),
        21 => line.replacen(
            '{',
            r#"{"data":null,"scores":{"D1":{"score":2.0,"source":"verifier-llm","q":{"r":"\ud83d\ude00"}},"D5":{"score":1e1,"source":"verifier-llm"}},"#,
            1,
        ),
        22 => line.replacen('{', r#"{"data":{"s":"\ud800"},"#, 1),
        23 => line.replacen('{', r#"{"body":"\udc00 x","#, 1),
        _ => line,
    };
    text.into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Replay's borrowed fast path folds exactly what the strict parser folds, to the byte.
    #[test]
    fn fast_replay_path_matches_the_strict_parser(
        specs in prop::collection::vec((arbitrary_event(), 0u8..28, 0usize..300), 0..60)
    ) {
        let table = casual();
        let mut fast = super::Replay::new();
        let mut strict = super::Replay::new();
        for (i, (spec, bend, cut)) in specs.into_iter().enumerate() {
            let n = u32::try_from(i).unwrap_or(0);
            let line = line_for(&build(n, spec), bend, cut);
            let line_no = u64::from(n) + 1;
            let a = fast.fold_line(&table, line_no, &line);
            let b = strict.fold_parsed(&table, line_no, super::replay::parse_line(&line)).is_ok_and(|folded| folded.is_some());
            prop_assert_eq!(a, b, "line {}: {}", line_no, String::from_utf8_lossy(&line));
        }
        prop_assert_eq!(
            serde_json::to_string(&fast).expect("serialises"),
            serde_json::to_string(&strict).expect("serialises")
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Hostile bytes and JSON-shaped noise: never a panic, and both ways of reading agree.
    #[test]
    fn fast_replay_path_matches_the_strict_parser_on_noise(
        lines in prop::collection::vec(prop_oneof![
            prop::collection::vec(any::<u8>(), 0..120),
            r#"\{("(id|ts|session_id|from|kind|body|data|to|metadata|scores|artifacts)":("[a-z.\\]{0,8}"|null|\[\]|\{\}|[0-9e.-]{1,6}|true),?){0,8}\}"#
                .prop_map(String::into_bytes),
        ], 0..30)
    ) {
        let table = casual();
        let mut fast = super::Replay::new();
        let mut strict = super::Replay::new();
        for (n, line) in (1u64..).zip(&lines) {
            let a = fast.fold_line(&table, n, line);
            let b = strict.fold_parsed(&table, n, super::replay::parse_line(line)).is_ok_and(|folded| folded.is_some());
            prop_assert_eq!(a, b);
        }
        prop_assert_eq!(
            serde_json::to_string(&fast).expect("serialises"),
            serde_json::to_string(&strict).expect("serialises")
        );
    }
}

/// The reference's own transcripts (legacy shapes, mapped scores, refused writes) fold the same
/// both ways, line by line and to the byte.
#[test]
fn fast_replay_path_matches_the_strict_parser_on_the_reference_transcripts() {
    let files = [
        include_str!("../../../../tests/fixtures/transcripts/legacy/mock-run-1.jsonl"),
        include_str!(
            "../../../../tests/fixtures/transcripts/legacy/real-01KQMS9E5M1Z7TEF32E81YXAGT.jsonl"
        ),
        include_str!(
            "../../../../tests/fixtures/transcripts/legacy/real-01KQNAK1CXTBDEBX2WP2QQK891.jsonl"
        ),
        include_str!(
            "../../../../tests/fixtures/transcripts/legacy/real-01KQQ40DCPNGHF54P2BJKP10MH.jsonl"
        ),
    ];
    let table = casual();
    for file in files {
        let mut fast = super::Replay::new();
        let mut strict = super::Replay::new();
        for (n, line) in (1u64..).zip(file.lines()) {
            let a = fast.fold_line(&table, n, line.as_bytes());
            let b = strict
                .fold_parsed(&table, n, super::replay::parse_line(line.as_bytes()))
                .is_ok_and(|folded| folded.is_some());
            assert_eq!(a, b, "line {n}: {line}");
        }
        assert!(fast.stats.mapped > 0, "the fixtures hold legacy lines");
        assert_eq!(
            serde_json::to_string(&fast).expect("serialises"),
            serde_json::to_string(&strict).expect("serialises")
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A fold resumed from a snapshot is the fold of everything: fold a prefix, serialise it as
    /// the snapshot file does, read it back, fold the rest, and compare with one fold of all the
    /// lines, to the byte. Lines repeat earlier ids (so the duplicate rule is exercised across the
    /// cut), are bent like real files, and judges claim arbitrary fractional scores.
    #[test]
    fn a_fold_resumed_from_a_snapshot_equals_the_whole_fold(
        specs in prop::collection::vec(
            (arbitrary_event(), 0u8..28, 0usize..300, proptest::option::of(0usize..60), -1e6f64..1e6),
            0..60,
        ),
        cut in 0usize..60,
    ) {
        let table = casual();
        let lines: Vec<Vec<u8>> = specs
            .into_iter()
            .enumerate()
            .map(|(i, (spec, bend, cut_at, repeat, claim))| {
                let n = repeat.filter(|&r| r < i).unwrap_or(i);
                let mut event = build(u32::try_from(n).unwrap_or(0), spec);
                if let Some(scores) = event.scores.as_mut() {
                    scores.aggregate = Some(claim);
                    if let Some(d1) = scores.d1.as_mut() {
                        d1.score = claim / 7.0;
                    }
                }
                line_for(&event, bend, cut_at)
            })
            .collect();
        let cut = cut.min(lines.len());
        let mut whole = super::Replay::new();
        for (n, line) in (1u64..).zip(&lines) {
            whole.fold_line(&table, n, line);
        }
        let mut prefix = super::Replay::new();
        for (n, line) in (1u64..).zip(&lines[..cut]) {
            prefix.fold_line(&table, n, line);
        }
        let saved = serde_json::to_string(&super::fold_snapshot::FoldSnapshot::of(&prefix))
            .expect("serialises");
        let loaded: super::fold_snapshot::FoldSnapshot =
            serde_json::from_str(&saved).expect("deserialises");
        prop_assert_eq!(&loaded, &super::fold_snapshot::FoldSnapshot::of(&prefix));
        let mut resumed = loaded.into_replay().expect("a fold's own window is consistent");
        for (n, line) in (1u64..).zip(&lines).skip(cut) {
            resumed.fold_line(&table, n, line);
        }
        prop_assert_eq!(
            serde_json::to_string(&resumed).expect("serialises"),
            serde_json::to_string(&whole).expect("serialises")
        );
        prop_assert_eq!(resumed.recent_ids(), whole.recent_ids());
    }
}

/// The reference's verdict line (dimensions with keys ours lacks) is mapped on the fast path, not
/// left to the strict parser, and the other lines of its mock session are read there too.
#[test]
fn the_reference_mock_session_is_read_on_the_fast_path() {
    let file = include_str!("../../../../tests/fixtures/transcripts/legacy/mock-run-1.jsonl");
    let table = casual();
    for line in file.lines() {
        let prepared = super::replay::prepare_line(line, &table);
        let super::replay::Prepared::Spans(mut spans) = prepared else {
            panic!("left to the strict parser: {line}");
        };
        if line.contains(r#""kind":"judge.score""#) {
            assert!(spans.mapped().is_some_and(|changes| !changes.is_empty()));
        }
    }
}
