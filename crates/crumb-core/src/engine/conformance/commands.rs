//! C14–C21: pause and resume, interventions, acks, `/ask`, the terminal state, and replay
//! determinism.

use serde_json::{Value, json};

use super::usage;
use crate::engine::effect::{Effect, SpawnCause};
use crate::engine::testkit::{
    FAIL_DIMS, PARTIAL_DIMS, PASS_DIMS, Script, ack, appended, data, scores, spawned, spawns,
    without_acks,
};
use crate::transcript::Kind;
use crate::vocab::{Severity, Verdict};

// ---- C14: pause and resume ----------------------------------------------------------------------

#[test]
fn c14_global_pause_queues_and_resume_refires_exactly_the_queued_spawn() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.judge(scores(FAIL_DIMS, Verdict::Fail, None, Some("too slow")));
    s.build(None);
    let effects = s.user(Kind::UserPause, "lunch", Value::Null);
    assert_eq!(ack(&effects), (true, "paused globally".to_owned()));
    let effects = s.qa(0);
    assert!(spawns(&effects).is_empty());
    assert_eq!(appended(&effects, Kind::Hook).len(), 1);
    assert!(s.state.roles["verifier"].queued.is_some());
    let effects = s.user(Kind::UserResume, "", Value::Null);
    assert_eq!(spawned(&effects), ["verifier"]);
    assert_eq!(
        ack(&effects),
        (true, "resumed globally; re-fired verifier".to_owned())
    );
    // A second resume re-fires nothing.
    assert!(spawns(&s.user(Kind::UserResume, "", Value::Null)).is_empty());
}

#[test]
fn queued_spawns_keep_their_feedback() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    s.user(Kind::UserPause, "", json!({"actor": "builder"}));
    let effects = s.judge(scores(
        FAIL_DIMS,
        Verdict::Fail,
        None,
        Some("jump is broken"),
    ));
    assert!(spawns(&effects).is_empty());
    let effects = s.send("user", Kind::UserResume, |e| e.to = Some("builder".into()));
    let spawn = spawns(&effects)[0];
    assert_eq!(spawn.role, "builder");
    assert_eq!(
        spawn.feedback.as_ref().map(|f| f.text.as_str()),
        Some("jump is broken")
    );
    assert_eq!(
        ack(&effects),
        (true, "resumed @builder; re-fired builder".to_owned())
    );
}

#[test]
fn a_role_pause_holds_only_that_role() {
    let mut s = Script::new();
    let effects = s.send("user", Kind::UserPause, |e| e.to = Some("builder".into()));
    assert_eq!(ack(&effects), (true, "paused @builder".to_owned()));
    assert_eq!(spawned(&s.goal()), ["planner-lead"]);
    assert!(spawns(&s.spec()).is_empty());
}

#[test]
fn commands_naming_unknown_roles_get_error_acks_and_change_nothing() {
    let mut s = Script::new();
    s.goal();
    let before = s.state.clone();
    for (kind, value) in [
        (Kind::UserPause, json!({"actor": "researcher"})),
        (Kind::UserResume, json!({"actor": "researcher"})),
        (Kind::UserIntervene, json!({"goto": "researcher"})),
        (
            Kind::UserIntervene,
            json!({"swap": {"from": "researcher", "to": "mock"}, "reset_circuit": "builder"}),
        ),
        (Kind::UserIntervene, json!({"cancel": "nobody"})),
        (Kind::UserIntervene, json!({"reset_circuit": "nobody"})),
        (Kind::UserIntervene, json!({"ask": "weather"})),
    ] {
        let effects = s.user(kind, "x", value.clone());
        let (ok, body) = ack(&effects);
        assert!(!ok, "{value}: {body}");
        assert!(body.starts_with("error: "), "{body}");
        assert_eq!(without_acks(&effects).len(), 0, "{value}");
    }
    assert_eq!(s.state.roles, before.roles);
    assert_eq!(s.state.paused, before.paused);
}

// ---- C15–C17: interventions, acks, ask ----------------------------------------------------------

#[test]
fn c15_goto_spawns_with_the_body_and_consumes_the_event() {
    let mut s = Script::new();
    s.goal();
    let effects = s.user(
        Kind::UserIntervene,
        "redo from spec",
        json!({"goto": "planner-lead"}),
    );
    assert_eq!(ack(&effects).1, "goto planner-lead");
    let spawn = spawns(&effects)[0];
    assert_eq!(spawn.cause, SpawnCause::Goto);
    assert_eq!(spawn.interventions[0].text, "redo from spec");
    assert_eq!(
        spawn.consumed_intervene_ids,
        [crate::engine::testkit::id(2)]
    );
}

#[test]
fn c15_swap_cancel_and_reset_circuit() {
    let mut s = Script::new();
    s.goal();
    let effects = s.user(
        Kind::UserIntervene,
        "",
        json!({"swap": {"from": "builder", "to": "mock"}}),
    );
    assert_eq!(ack(&effects).1, "swapped builder → mock");
    assert_eq!(spawns(&s.spec())[0].adapter.as_deref(), Some("mock"));
    let effects = s.user(
        Kind::UserIntervene,
        "taking too long",
        json!({"cancel": "builder"}),
    );
    let Some(Effect::Cancel(cancel)) = effects.iter().find(|e| matches!(e, Effect::Cancel(_)))
    else {
        panic!("cancel")
    };
    assert_eq!(cancel.role.as_deref(), Some("builder"));
    assert!(cancel.reason.contains("taking too long"));
    let effects = s.user(Kind::UserIntervene, "", json!({"cancel": "all"}));
    assert_eq!(ack(&effects).1, "cancelled all spawns");
    s.error("builder");
    s.error("builder");
    let effects = s.user(Kind::UserIntervene, "", json!({"reset_circuit": "builder"}));
    assert_eq!(ack(&effects).1, "reset circuit for builder");
    assert_eq!(s.state.roles["builder"].failures_in_a_row, 0);
}

#[test]
fn c16_targeted_appends_reach_one_role_and_broadcasts_reach_every_role_once() {
    let mut s = Script::new();
    s.goal();
    let effects = s.send("user", Kind::UserIntervene, |e| {
        e.to = Some("builder".into());
        e.data = Some(data(json!({"append": "use only red and green"})));
    });
    assert_eq!(ack(&effects).1, "appended to next @builder spawn");
    s.user(
        Kind::UserIntervene,
        "",
        json!({"append": "keep it under 100 KB"}),
    );
    let builder = s.spec();
    let texts: Vec<&str> = spawns(&builder)[0]
        .interventions
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(texts, ["use only red and green", "keep it under 100 KB"]);
    assert_eq!(spawns(&builder)[0].consumed_intervene_ids.len(), 2);
    s.build(None);
    let verifier = s.qa(0);
    let texts: Vec<&str> = spawns(&verifier)[0]
        .interventions
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(
        texts,
        ["keep it under 100 KB"],
        "the targeted append is not the verifier's"
    );
    // Consumed: the next builder spawn gets nothing.
    let again = s.judge(scores(FAIL_DIMS, Verdict::Fail, None, None));
    assert!(spawns(&again)[0].interventions.is_empty());
}

#[test]
fn c17_every_user_kind_is_acked_with_ack_for() {
    let mut s = Script::new();
    s.goal();
    for (kind, value, expected) in [
        (
            Kind::UserPause,
            json!({"actor": "planner-lead"}),
            "paused @planner-lead",
        ),
        (
            Kind::UserResume,
            json!({"actor": "planner-lead"}),
            "resumed @planner-lead",
        ),
        (
            Kind::UserIntervene,
            json!({"goto": "verifier"}),
            "goto verifier",
        ),
        (Kind::UserIntervene, Value::Null, "intervene queued"),
        (
            Kind::UserVeto,
            json!({"target_msg_id": "01H00000000000000000000099"}),
            "vetoed 01H00000000000000000000099",
        ),
    ] {
        let effects = s.user(kind, "do thing", value);
        let acks = appended(&effects, Kind::Ack);
        assert_eq!(acks.len(), 1);
        assert_eq!(acks[0].from, "system");
        assert_eq!(
            acks[0].metadata.as_ref().and_then(|m| m.ack_for.clone()),
            Some(crate::engine::testkit::id(s.n))
        );
        assert_eq!(acks[0].body.as_deref(), Some(expected));
    }
}

#[test]
fn ask_answers_describe_the_state_before_the_question() {
    let mut s = Script::new();
    s.send("system", Kind::SessionStart, |_| {});
    s.goal();
    let effects = s.send("user", Kind::UserIntervene, |e| {
        e.data = Some(data(json!({"ask": "status"})));
        e.ts = crate::engine::testkit::ts_ms(125_000);
    });
    let notes = appended(&effects, Kind::Note);
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].body.as_deref(),
        Some("session 2m4s | last=user/goal | next=planner-lead")
    );
    assert_eq!(
        notes[0]
            .metadata
            .as_ref()
            .and_then(|m| m.in_reply_to.clone()),
        Some(crate::engine::testkit::id(3))
    );
    assert_eq!(ack(&effects).1, "answered");
}

// ---- done, re-reduction, determinism ------------------------------------------------------------

#[test]
fn a_done_event_sets_the_terminal_state_and_later_commands_change_nothing() {
    let mut s = Script::new();
    s.goal();
    s.send("coordinator", Kind::Done, |e| {
        e.body = Some("wall_clock_exhausted".into());
    });
    assert_eq!(
        s.state.done.as_ref().map(|d| d.reason.as_str()),
        Some("wall_clock_exhausted")
    );
    assert!(s.spec().is_empty());
    let effects = s.user(Kind::UserIntervene, "", json!({"goto": "builder"}));
    assert!(!ack(&effects).0);
    assert_eq!(without_acks(&effects).len(), 0);
    let asked = s.user(Kind::UserIntervene, "", json!({"ask": "status"}));
    assert_eq!(appended(&asked, Kind::Note).len(), 1, "/ask still answers");
}

/// Events the engine asks to append come back through the transcript; reducing them must not
/// count anything twice or trigger anything.
#[test]
fn re_reducing_appended_events_is_harmless() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let mut pending = s.judge(scores(
        [4.0, 5.0, 4.0, 5.0, 4.0, 4.0],
        Verdict::Pass,
        None,
        None,
    ));
    pending.extend(s.user(Kind::UserIntervene, "", json!({"ask": "scorecard"})));
    pending.extend(s.send("planner-lead", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(usage(260_000)));
    }));
    let before = s.state.clone();
    for effect in pending {
        let Effect::Append(append) = effect else {
            continue;
        };
        let mut event = s.next(&append.draft.from, append.draft.kind);
        event.data = append.draft.data.clone();
        event.body = append.draft.body.clone();
        event.metadata = append.draft.metadata.clone().map(Box::new);
        event.parent_event_id = append.draft.parent_event_id.clone();
        let effects = s.feed(&event);
        assert!(
            effects.is_empty(),
            "{:?} caused {effects:#?}",
            append.draft.kind
        );
    }
    assert_eq!(s.state.verification, before.verification);
    assert_eq!(s.state.budgets, before.budgets);
    assert_eq!(s.state.awaiting, before.awaiting);
    assert_eq!(s.state.roles, before.roles);
}

#[test]
fn c21_replaying_the_same_events_twice_gives_byte_identical_state() {
    let run = || {
        let mut s = Script::new();
        s.up_to_verifier(0);
        s.judge(scores(
            FAIL_DIMS,
            Verdict::Fail,
            Some(Severity::Important),
            Some("x"),
        ));
        s.user(Kind::UserPause, "", Value::Null);
        s.build(Some("openai"));
        s.user(Kind::UserResume, "", Value::Null);
        s.qa(0);
        s.judge(scores(PARTIAL_DIMS, Verdict::Partial, None, None));
        s.user(Kind::UserApprove, "", Value::Null);
        serde_json::to_string(&s.state).expect("state serialises")
    };
    assert_eq!(run(), run());
}

#[test]
fn effect_ids_are_the_event_id_and_an_index() {
    let mut s = Script::new();
    s.up_to_verifier(0);
    let mut inflated = scores(PASS_DIMS, Verdict::Pass, None, None);
    inflated.aggregate = Some(30.0);
    let effects = s.judge(inflated);
    let ids: Vec<&str> = effects.iter().map(Effect::id).collect();
    let event = crate::engine::testkit::id(s.n);
    assert_eq!(ids, [format!("{event}:0"), format!("{event}:1")]);
    let Effect::Append(audit) = &effects[0] else {
        panic!("audit first")
    };
    assert_eq!(
        audit
            .draft
            .metadata
            .as_ref()
            .and_then(|m| m.effect_id.as_deref()),
        Some(ids[0])
    );
}
