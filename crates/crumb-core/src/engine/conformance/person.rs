//! C39–C42: a person's lines follow the routes. While a question or a verdict awaits a person,
//! only the declared `user.*` routes move the session: `@role text` is queued for that role's
//! next turn (never a wake), and `user.answer` is routed apart from `user.veto`.

use serde_json::Value;

use super::declared::table;
use crate::engine::effect::SpawnCause;
use crate::engine::testkit::{Script, ack, done_reason, spawned, spawns};
use crate::transcript::Kind;

/// A planner that may ask a question before it writes the spec the builder needs.
const ASKS: &str = r"
version: 1
name: asks
kinds:
  question: {}
  draft: {}
roles:
  planner: { template: p.md.j2, produces: [question, draft] }
  builder: { template: b.md.j2, produces: [build] }
routes:
  - { on: goal, spawn: planner }
  - { on: question, await: human }
  - { on: user.answer, spawn: planner }
  - { on: user.veto, done: { outcome: rejected, reason: vetoed } }
  - { on: draft, spawn: builder }
  - { on: build, done: { outcome: pass, reason: built } }
";

fn asked() -> Script {
    let mut s = Script::with(table(ASKS));
    assert_eq!(spawned(&s.goal()), ["planner"]);
    s.send("planner", kind("question"), |e| {
        e.body = Some("which colour?".into());
    });
    assert!(s.state.awaiting.is_some());
    s
}

fn kind(name: &str) -> Kind {
    name.parse().expect("a declarable name")
}

/// `@role text`, as the inbox writes it.
fn direct(s: &mut Script, role: &str, text: &str) -> Vec<crate::engine::Effect> {
    s.send("user", Kind::UserIntervene, |e| {
        e.to = Some(role.into());
        e.body = Some(text.into());
        e.data = Some(crate::engine::testkit::data(
            serde_json::json!({ "target_actor": role }),
        ));
    })
}

#[test]
fn c39_an_at_role_line_while_a_question_waits_is_queued_not_a_wake() {
    let mut s = asked();
    let effects = direct(&mut s, "builder", "just build it");
    assert!(spawned(&effects).is_empty(), "no turn outside the routes");
    let (ok, body) = ack(&effects);
    assert!(
        ok && body.contains("queued for @builder's next turn"),
        "{body}"
    );
    assert!(s.state.awaiting.is_some(), "the question still waits");
    // The message reaches the builder when a route starts it, after the declared draft.
    s.user(Kind::UserAnswer, "blue", Value::Null);
    let effects = s.send("planner", kind("draft"), |_| {});
    let builder = &spawns(&effects)[0];
    assert_eq!(builder.role, "builder");
    assert_eq!(builder.interventions[0].text, "just build it");
}

#[test]
fn c40_an_answer_takes_the_answer_route_and_reaches_the_role() {
    let mut s = asked();
    let effects = s.user(Kind::UserAnswer, "blue, please", Value::Null);
    assert_eq!(ack(&effects), (true, "answered `question`".to_owned()));
    let planner = &spawns(&effects)[0];
    assert_eq!(
        (planner.role.as_str(), planner.cause),
        ("planner", SpawnCause::Answer)
    );
    assert_eq!(planner.interventions[0].text, "blue, please");
    assert!(planner.feedback.is_none(), "an answer is not a verdict");
    assert!(s.state.awaiting.is_none());
}

#[test]
fn c41_a_veto_takes_its_own_route_not_the_answers() {
    let mut s = asked();
    let effects = s.user(Kind::UserVeto, "stop asking", Value::Null);
    assert!(spawned(&effects).is_empty());
    assert_eq!(done_reason(&effects), Some("vetoed"));
}

#[test]
fn c42_an_answer_with_nothing_waiting_or_no_route_changes_nothing() {
    let mut s = Script::with(table(ASKS));
    s.goal();
    let effects = s.user(Kind::UserAnswer, "blue", Value::Null);
    assert!(spawned(&effects).is_empty());
    assert_eq!(
        ack(&effects),
        (
            false,
            "error: nothing awaits an answer; nothing changed".to_owned()
        )
    );
    // A question waits, but the pipeline routes only a veto: the answer is refused.
    let mut s = Script::with(table(
        &ASKS.replace("  - { on: user.answer, spawn: planner }\n", ""),
    ));
    s.goal();
    s.send("planner", kind("question"), |_| {});
    let effects = s.user(Kind::UserAnswer, "fine", Value::Null);
    assert!(spawned(&effects).is_empty());
    assert_eq!(
        ack(&effects),
        (
            false,
            "error: the pipeline declares no `user.answer` route; nothing changed".to_owned()
        )
    );
    assert!(s.state.awaiting.is_some());
}
