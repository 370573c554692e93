//! A [`UserCommand`] as the `user.*` event draft the coordinator appends (always `from: user`).
//!
//! The shapes are the ones the reducer reads (`src/engine/commands.rs`): pause and resume carry the
//! role in `to` and in `data.actor`; `user.intervene` carries its verb in `data` (`goto`, `swap`,
//! `sandwich_append`, `cancel`, `reset_circuit`, `ask`, `note`, `redo`) and a targeted message in
//! `data.target_actor`. Every draft records `data.inbox_offset`, the byte offset just past its
//! line, so a resumed coordinator can derive how much of the inbox it already consumed.

use serde_json::{Map, Value, json};

use super::command::{CircuitTarget, InboxError, UserCommand};
use crate::transcript::{Draft, Event, Kind};

/// Longest rejected line echoed back in an error ack.
const ECHO_CHARS: usize = 200;

/// The draft for `command`, read from the inbox line that ends at byte `inbox_offset`
/// (`None` when the command did not come from the inbox file, e.g. Studio writing directly).
pub fn to_draft(command: &UserCommand, inbox_offset: Option<u64>) -> Draft {
    let mut data = Map::new();
    let (kind, to, body) = match command {
        UserCommand::Approve { note } => (Kind::UserApprove, None, note.clone()),
        UserCommand::Veto { reason } => (Kind::UserVeto, None, reason.clone()),
        UserCommand::Answer { text } => (Kind::UserAnswer, None, Some(text.clone())),
        UserCommand::Pause { role, reason } => {
            put_actor(&mut data, role.as_ref());
            (Kind::UserPause, role.clone(), reason.clone())
        }
        UserCommand::Resume { role } => {
            put_actor(&mut data, role.as_ref());
            (Kind::UserResume, role.clone(), None)
        }
        UserCommand::Goto { role, message } => {
            data.insert("goto".into(), json!(role));
            (Kind::UserIntervene, None, message.clone())
        }
        UserCommand::Swap { role, adapter } => {
            data.insert(
                "swap".into(),
                json!({ "from": role, "to": adapter.as_str() }),
            );
            (Kind::UserIntervene, None, None)
        }
        UserCommand::Append { role, text } => {
            data.insert("sandwich_append".into(), json!(text));
            if let Some(role) = role {
                data.insert("target_actor".into(), json!(role));
            }
            (Kind::UserIntervene, role.clone(), None)
        }
        UserCommand::Cancel { role, reason } => {
            data.insert("cancel".into(), json!(role.as_deref().unwrap_or("all")));
            (Kind::UserIntervene, None, reason.clone())
        }
        UserCommand::ResetCircuit { target } => {
            let value = match target {
                CircuitTarget::All => "all",
                CircuitTarget::Role(role) => role.as_str(),
            };
            data.insert("reset_circuit".into(), json!(value));
            (Kind::UserIntervene, None, None)
        }
        UserCommand::Ask { topic } => {
            data.insert("ask".into(), json!(topic.as_str()));
            (Kind::UserIntervene, None, Some(format!("/ask {topic}")))
        }
        UserCommand::Note { text } => {
            data.insert("note".into(), json!(text));
            (Kind::UserIntervene, None, Some(text.clone()))
        }
        UserCommand::Redo { message } => {
            data.insert("redo".into(), Value::Bool(true));
            (Kind::UserIntervene, None, message.clone())
        }
        UserCommand::Direct { role, message } => {
            data.insert("target_actor".into(), json!(role));
            (
                Kind::UserIntervene,
                Some(role.clone()),
                Some(message.clone()),
            )
        }
        UserCommand::Message { text } => (Kind::UserIntervene, None, Some(text.clone())),
    };
    if let Some(offset) = inbox_offset {
        data.insert("inbox_offset".into(), json!(offset));
    }
    let mut draft = Draft::new("user", kind);
    if let Some(to) = to {
        draft = draft.to(to);
    }
    if let Some(body) = body {
        draft = draft.body(body);
    }
    if !data.is_empty() {
        draft = draft.data(data);
    }
    draft
}

/// The error ack for an inbox line that was rejected: from `system`, `data.ok: false`, the
/// reason in the body and the line echoed (clipped). It records `data.inbox_offset` like a command
/// would, so a rejected line is answered exactly once too.
pub fn rejection_draft(error: &InboxError, line: &str, inbox_offset: u64) -> Draft {
    let mut data = Map::new();
    data.insert("ok".into(), Value::Bool(false));
    data.insert(
        "line".into(),
        json!(line.chars().take(ECHO_CHARS).collect::<String>()),
    );
    data.insert("inbox_offset".into(), json!(inbox_offset));
    Draft::new("system", Kind::Ack)
        .body(format!("error: {error}"))
        .data(data)
}

/// How much of the inbox a transcript has consumed: the largest `data.inbox_offset` on any event.
pub fn consumed_offset<'a>(events: impl IntoIterator<Item = &'a Event>) -> u64 {
    events
        .into_iter()
        .filter_map(|event| event.data.as_ref()?.get("inbox_offset")?.as_u64())
        .max()
        .unwrap_or(0)
}

fn put_actor(data: &mut Map<String, Value>, role: Option<&String>) {
    if let Some(role) = role {
        data.insert("actor".into(), json!(role));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::AdapterKind;
    use crate::runtime::inbox::command::AskTopic;

    fn json_of(command: &UserCommand) -> Value {
        serde_json::to_value(to_draft(command, Some(42))).unwrap()
    }

    #[test]
    fn consumed_offset_is_the_largest_recorded() {
        let event = |offset: Option<u64>| {
            let draft = match offset {
                Some(offset) => to_draft(&UserCommand::Resume { role: None }, Some(offset)),
                None => Draft::new("builder", Kind::Build),
            };
            draft.into_event(
                "01J00000000000000000000000".into(),
                "2026-11-30T00:00:00.000Z".into(),
                "s".into(),
            )
        };
        assert_eq!(consumed_offset(&[]), 0);
        assert_eq!(
            consumed_offset(&[
                event(Some(7)),
                event(None),
                event(Some(30)),
                event(Some(12))
            ]),
            30
        );
    }

    #[test]
    fn drafts_have_the_shapes_the_reducer_reads() {
        assert_eq!(
            json_of(&UserCommand::Pause {
                role: Some("builder".into()),
                reason: None
            }),
            json!({"from": "user", "kind": "user.pause", "to": "builder", "data": {"actor": "builder", "inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Resume { role: None }),
            json!({"from": "user", "kind": "user.resume", "data": {"inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Veto {
                reason: Some("too dark".into())
            }),
            json!({"from": "user", "kind": "user.veto", "body": "too dark", "data": {"inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Answer {
                text: "blue".into()
            }),
            json!({"from": "user", "kind": "user.answer", "body": "blue", "data": {"inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Goto {
                role: "planner-lead".into(),
                message: Some("rethink".into())
            }),
            json!({"from": "user", "kind": "user.intervene", "body": "rethink", "data": {"goto": "planner-lead", "inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Swap {
                role: "builder".into(),
                adapter: AdapterKind::Mock
            }),
            json!({"from": "user", "kind": "user.intervene", "data": {"swap": {"from": "builder", "to": "mock"}, "inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Cancel {
                role: None,
                reason: None
            }),
            json!({"from": "user", "kind": "user.intervene", "data": {"cancel": "all", "inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Ask {
                topic: AskTopic::Scorecard
            }),
            json!({"from": "user", "kind": "user.intervene", "body": "/ask scorecard", "data": {"ask": "scorecard", "inbox_offset": 42}})
        );
        assert_eq!(
            json_of(&UserCommand::Direct {
                role: "builder".into(),
                message: "faster".into()
            }),
            json!({"from": "user", "kind": "user.intervene", "to": "builder", "body": "faster", "data": {"target_actor": "builder", "inbox_offset": 42}})
        );
        let rejected = serde_json::to_value(rejection_draft(
            &InboxError::TooLong { len: 9 },
            "xxxxxxxxx",
            10,
        ))
        .unwrap();
        assert_eq!(rejected["kind"], "ack");
        assert_eq!(
            rejected["data"],
            json!({"ok": false, "line": "xxxxxxxxx", "inbox_offset": 10})
        );
        let approve =
            serde_json::to_value(to_draft(&UserCommand::Approve { note: None }, None)).unwrap();
        assert_eq!(approve, json!({"from": "user", "kind": "user.approve"}));
    }
}
