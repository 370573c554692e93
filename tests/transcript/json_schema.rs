//! The transcript schema: the committed file is the generated one, every kind round-trips, and the
//! casual pipeline's events stay valid against the legacy schema.

use super::*;

#[test]
fn committed_schema_matches_generated() {
    let run = crumb().args(["schema", "transcript"]).run().expect_code(0);
    let committed = fs::read_to_string(repo_root().join("schemas/transcript.schema.json"))
        .expect("committed schema");
    assert_eq!(
        committed, run.stdout,
        "schemas/transcript.schema.json is stale: regenerate with `crumb schema transcript`"
    );
    assert_eq!(committed, schema::render());
}

#[test]
fn schema_documents_added_kinds_and_allows_broadcast() {
    let schema = schema::transcript_schema();
    let kinds = &schema["$defs"]["Kind"]["anyOf"];
    for added in ["session.awaiting", "hook"] {
        let entry = kinds
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["const"] == added)
            .expect("added kind in schema");
        assert!(
            entry["description"]
                .as_str()
                .unwrap()
                .contains("crumb addition"),
            "{added} is documented"
        );
    }
    let validator = jsonschema::validator_for(&schema).unwrap();
    let broadcast = json!({"id":"01JZ0000000000000000000001","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"user","kind":"user.intervene","to":"*"});
    assert!(
        validator.is_valid(&broadcast),
        "`to: \"*\"` (a broadcast) must validate"
    );
    // A pipeline's own kind validates; a name outside the pattern, or in a reserved namespace, does not.
    let with_kind = |kind: &str| json!({"id":"01JZ0000000000000000000001","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"researcher","kind":kind});
    assert!(validator.is_valid(&with_kind("research.note")));
    assert!(validator.is_valid(&with_kind("spec")));
    for refused in ["Research", "user.wish", "qa.extra", "a..b", ""] {
        assert!(!validator.is_valid(&with_kind(refused)), "{refused}");
    }
    let null_field = json!({"id":"01JZ0000000000000000000001","ts":"2026-05-01T10:00:00.000Z","session_id":"s","from":"user","kind":"goal","body":null});
    assert!(
        !validator.is_valid(&null_field),
        "optional fields are omitted, never null"
    );
}

#[test]
fn every_kind_round_trips_through_the_generated_schema() {
    let validator = jsonschema::validator_for(&schema::transcript_schema()).unwrap();
    for &kind in Kind::ALL {
        for event in [
            full_event(kind),
            Draft::new("builder", kind).into_event(
                "01JZ0000000000000000000003".into(),
                "2026-05-01T10:00:00.000Z".into(),
                "s".into(),
            ),
        ] {
            let value = serde_json::to_value(&event).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("{}: {e}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{kind}: {errors:?}");
            let line = serde_json::to_string(&event).unwrap();
            assert!(
                !line.contains("null"),
                "{kind}: no nulls on the wire: {line}"
            );
            let back: Event = serde_json::from_str(&line).unwrap();
            assert_eq!(back, event);
        }
    }
}

#[test]
fn kinds_have_wire_strings_parsers_and_explanations() {
    assert_eq!(
        Kind::ALL.len(),
        39,
        "the 36 kinds of the format plus session.awaiting, hook and user.answer"
    );
    for &kind in Kind::ALL {
        assert_eq!(kind.as_str().parse::<Kind>(), Ok(kind));
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        let text = crumb::transcript::explain(kind.as_str()).expect("every kind is explained");
        assert!(
            text.starts_with(kind.as_str()) && text.contains("Written by:"),
            "{text}"
        );
    }
    assert!("Compile".parse::<Kind>().is_err());
    assert!("user.wish".parse::<Kind>().is_err(), "a reserved namespace");
    assert!(
        "compile".parse::<Kind>().is_ok_and(Kind::is_declared),
        "a name a pipeline may declare"
    );
    assert_eq!(crumb::transcript::explain("compile"), None);
    assert_eq!(crumb::transcript::explain("no.such.kind"), None);
}

/// Events shaped like those the casual pipeline writes must validate against the legacy transcript
/// schema (`tests/fixtures/transcripts/legacy/message.schema.json`), so tools reading the older
/// format still read ours. Skipped on purpose: our added kinds (`session.awaiting`, `hook`), which
/// the legacy format has no way to say, and `to: "*"`, which the legacy schema wrongly rejects.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one table of events, read top to bottom"
)]
fn casual_pipeline_events_validate_against_the_legacy_schema() {
    let path = repo_root().join("tests/fixtures/transcripts/legacy/message.schema.json");
    let legacy: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&legacy)
        .unwrap();
    let stamp = |draft: Draft, n: u32| {
        draft.into_event(
            format!("01JZ00000000000000000000{n:02}"),
            "2026-05-01T10:00:00.000Z".into(),
            "sess-1".into(),
        )
    };
    let sha = "0123456789abcdef".repeat(4);
    let private = Metadata {
        visibility: Some(Visibility::Private),
        deterministic: Some(true),
        tool: Some("dispatch-pre-spawn@v1".into()),
        ..Metadata::default()
    };
    let events = vec![
        Draft::new("system", Kind::SessionStart)
            .data(data(json!({"pipeline": "casual", "pipeline_sha256": sha}))),
        Draft::new("user", Kind::Goal).body("a snake game"),
        Draft::new("planner-lead", Kind::AgentWake).metadata(Metadata {
            harness: Some("mock".into()),
            provider: Some("none".into()),
            effect_id: Some("e1".into()),
            ..Metadata::default()
        }),
        Draft::new("planner-lead", Kind::Spec)
            .body("spec")
            .data(data(json!({"acceptance_criteria": ["AC1", "AC2"]}))),
        Draft::new("planner-lead", Kind::AgentStop).metadata(Metadata {
            tokens_in: Some(100),
            tokens_out: Some(50),
            cost_usd: Some(0.0),
            latency_ms: Some(10),
            ..Metadata::default()
        }),
        Draft::new("builder", Kind::Build)
            .body("built")
            .artifact(ArtifactRef {
                path: "artifacts/game/index.html".into(),
                sha256: sha.clone(),
                role: Some(ArtifactRole::Src),
            }),
        Draft::new("system", Kind::QaResult)
            .data(data(json!({"exec_exit_code": 0, "ac_results": []})))
            .metadata(Metadata {
                deterministic: Some(true),
                tool: Some("qa-check-effect@v1".into()),
                provider: Some("none".into()),
                ..Metadata::default()
            }),
        Draft::new("verifier", Kind::JudgeScore).scores(Scores {
            d1: Some(dim(4.0, ScoreSource::VerifierLlm)),
            d2: Some(Dimension {
                score: 5.0,
                source: ScoreSource::QaCheckEffect,
                lookup: Some("qa.result.exec_exit_code".into()),
                evidence: Vec::new(),
            }),
            d3: Some(dim(3.0, ScoreSource::ReducerAuto)),
            aggregate: Some(24.0),
            verdict: Some(Verdict::Fail),
            feedback: Some("fix the collision".into()),
            suggested_change: Some("check bounds".into()),
            deviation: Some(Deviation {
                kind: Severity::Important,
            }),
            ..Scores::default()
        }),
        Draft::new("validator", Kind::Audit)
            .data(data(
                json!({"raw": {"aggregate": 24}, "corrected": {"aggregate": 20}}),
            ))
            .metadata(Metadata {
                deterministic: Some(true),
                tool: Some("anti-deception@v1".into()),
                audit_violations: vec!["verdict_recomputed".into()],
                ..Metadata::default()
            }),
        Draft::new("system", Kind::Audit)
            .data(data(
                json!({"violation": "forged_system_event_attempt", "actor": "builder"}),
            ))
            .metadata(Metadata {
                deterministic: Some(true),
                tool: Some("crumb-event-firewall@v1".into()),
                ..Metadata::default()
            }),
        Draft::new("user", Kind::UserIntervene)
            .body("/goto builder")
            .data(data(json!({"goto": "builder"}))),
        Draft::new("system", Kind::Ack)
            .parent("01JZ0000000000000000000011")
            .metadata(Metadata {
                ack_for: Some("01JZ0000000000000000000011".into()),
                ..Metadata::default()
            }),
        Draft::new("system", Kind::Note)
            .body("dispatch.spawn builder")
            .metadata(private),
        Draft::new("builder", Kind::Error)
            .body("adapter exited 1")
            .data(data(json!({"exit_code": 1}))),
        Draft::new("user", Kind::UserApprove),
        Draft::new("user", Kind::UserVeto).body("not fun"),
        Draft::new("verifier", Kind::HandoffRollback)
            .to("planner-lead")
            .body("re-plan"),
        Draft::new("system", Kind::Done).data(data(json!({"reason": "verdict_pass"}))),
    ];
    let mut checked = 0;
    for (n, draft) in (1u32..).zip(events) {
        let event = stamp(draft, n);
        assert!(!event.kind.is_crumb_addition());
        let value = serde_json::to_value(&event).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{} does not validate against the legacy schema: {errors:?}",
            event.kind
        );
        checked += 1;
    }
    assert_eq!(checked, 18);
}
