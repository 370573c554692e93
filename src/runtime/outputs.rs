//! Prior outputs a prompt may quote (`outputs.by_kind`, `outputs.by_role` in
//! [`crate::pipeline::template_variables`]): the latest event of each kind an agent wrote, and the latest
//! from each role. Every value is bounded so a chatty agent cannot bloat the next prompt. A role
//! that declares `sees:` gets only the kinds it lists: by kind, the others are absent; by role,
//! each role's latest output among those kinds (absent when it wrote none of them).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::engine::state::{MAX_TEXT, clip};
use crate::transcript::{Event, Kind};
use crate::vocab::RESERVED_ACTORS;

/// Longest body kept per output.
const MAX_BODY: usize = 4 * 1024;
/// Largest `data` (as JSON) kept per output; larger data is shown as `{}`.
const MAX_DATA: usize = 4 * 1024;
/// Most roles tracked (`from` is whatever an agent's actor is).
const MAX_ROLES: usize = 64;
/// Longest QA stream tail in `qa.checks[*]`.
pub(crate) const MAX_TAIL: usize = 2 * 1024;

/// The latest output of each role in each kind (numbered, so the latest of a role among the
/// kinds a prompt may see is known), and whether the goal was clipped.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    /// `(role, kind)` → (order noted, entry).
    latest: BTreeMap<(String, String), (u64, Value)>,
    roles: usize,
    noted: u64,
    goal_bytes: usize,
}

impl Outputs {
    /// Remember `event` if an agent wrote it as work (not runner bookkeeping).
    pub(crate) fn note(&mut self, event: &Event) {
        if event.kind == Kind::Goal {
            self.goal_bytes = event.body.as_deref().map_or(0, str::len);
            return;
        }
        if RESERVED_ACTORS.contains(&event.from.as_str()) || !is_output(event.kind) {
            return;
        }
        let data = event.data.as_ref().map_or_else(
            || json!({}),
            |d| {
                let value = Value::Object(d.clone());
                if value.to_string().len() <= MAX_DATA {
                    value
                } else {
                    json!({})
                }
            },
        );
        let entry = json!({
            "kind": event.kind.as_str(),
            "from": event.from,
            "body": clip(event.body.as_deref().unwrap_or(""), MAX_BODY),
            "data": data,
        });
        let known = self.latest.keys().any(|(role, _)| *role == event.from);
        if !known {
            if self.roles == MAX_ROLES {
                return;
            }
            self.roles += 1;
        }
        self.noted += 1;
        self.latest.insert(
            (event.from.clone(), event.kind.as_str().to_owned()),
            (self.noted, entry),
        );
    }

    /// `{by_kind, by_role}` for the template context of a role that `sees` these kinds (all
    /// when empty).
    pub(crate) fn to_value(&self, sees: &[String]) -> Value {
        let mut by_kind: BTreeMap<&str, &(u64, Value)> = BTreeMap::new();
        let mut by_role: BTreeMap<&str, &(u64, Value)> = BTreeMap::new();
        let visible = self
            .latest
            .iter()
            .filter(|((_, kind), _)| sees.is_empty() || sees.iter().any(|seen| seen == kind));
        for ((role, kind), entry) in visible {
            for (slot, key) in [(&mut by_kind, kind.as_str()), (&mut by_role, role.as_str())] {
                if slot.get(key).is_none_or(|kept| kept.0 < entry.0) {
                    slot.insert(key, entry);
                }
            }
        }
        let values = |map: BTreeMap<&str, &(u64, Value)>| -> serde_json::Map<String, Value> {
            map.into_iter()
                .map(|(key, (_, value))| (key.to_owned(), value.clone()))
                .collect()
        };
        json!({ "by_kind": values(by_kind), "by_role": values(by_role) })
    }

    /// Whether the goal the state holds was clipped (at [`MAX_TEXT`]).
    pub(crate) fn goal_truncated(&self) -> bool {
        self.goal_bytes > MAX_TEXT
    }
}

/// Kinds that are an agent's work, as opposed to the runner's and the stream tap's records.
fn is_output(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::AgentWake
            | Kind::AgentStop
            | Kind::ToolCall
            | Kind::ToolResult
            | Kind::Ack
            | Kind::Hook
            | Kind::Audit
            | Kind::Error
            | Kind::ArtifactCreated
            | Kind::Done
            | Kind::SessionStart
            | Kind::SessionEnd
            | Kind::SessionAwaiting
    ) && !kind.as_str().starts_with("user.")
}

/// The last [`MAX_TAIL`] bytes of a QA check's captured stream (`details.stdout`/`stderr`).
pub(crate) fn check_tail(check: &Value, stream: &str) -> Value {
    let Some(text) = check
        .get("details")
        .and_then(|d| d.get(stream))
        .and_then(Value::as_str)
    else {
        return Value::Null;
    };
    let mut start = text.len().saturating_sub(MAX_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    Value::String(text[start..].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(from: &str, kind: Kind, body: &str) -> Event {
        let mut e = crate::engine::testkit::event(1, from, kind);
        e.body = Some(body.to_owned());
        e
    }

    #[test]
    fn latest_output_per_kind_and_role_bounded() {
        let mut outputs = Outputs::default();
        outputs.note(&event("planner", Kind::Spec, "v1"));
        outputs.note(&event("planner", Kind::Spec, &"x".repeat(10_000)));
        outputs.note(&event("builder", Kind::ToolCall, "ls"));
        outputs.note(&event("system", Kind::Note, "runner"));
        let value = outputs.to_value(&[]);
        let body = value["by_kind"]["spec"]["body"]
            .as_str()
            .unwrap_or_default();
        assert!(body.len() <= MAX_BODY + 3);
        assert_eq!(value["by_role"]["planner"]["kind"], "spec");
        assert!(value["by_role"].get("builder").is_none());
        assert!(value["by_role"].get("system").is_none());
    }

    fn kind(name: &str) -> Kind {
        name.parse().expect("a declarable kind name")
    }

    /// A judge that sees `[goal, idea.review]` gets neither the draft's kind nor the drafter's
    /// draft: the drafter's entry is its latest review, and a kind it does not see is absent.
    #[test]
    fn a_role_that_declares_sees_gets_only_those_kinds() {
        let mut outputs = Outputs::default();
        outputs.note(&event("drafter", kind("idea.review"), "review"));
        outputs.note(&event("drafter", kind("idea.draft"), "draft"));
        outputs.note(&event("editor", kind("idea.draft"), "edit"));
        let sees = ["goal".to_owned(), "idea.review".to_owned()];
        let value = outputs.to_value(&sees);
        assert_eq!(
            value["by_kind"].as_object().map(serde_json::Map::len),
            Some(1),
            "{value}"
        );
        assert_eq!(value["by_kind"]["idea.review"]["body"], "review");
        assert_eq!(value["by_role"]["drafter"]["body"], "review", "{value}");
        assert!(value["by_role"].get("editor").is_none(), "{value}");
        assert!(!value.to_string().contains("draft\""), "{value}");
        let all = outputs.to_value(&[]);
        assert_eq!(all["by_kind"]["idea.draft"]["body"], "edit");
        assert_eq!(all["by_role"]["drafter"]["body"], "draft");
    }

    #[test]
    fn a_long_goal_is_flagged_and_tails_are_cut_from_the_end() {
        let mut outputs = Outputs::default();
        outputs.note(&event("user", Kind::Goal, &"g".repeat(MAX_TEXT + 1)));
        assert!(outputs.goal_truncated());
        let check = json!({"details": {"stdout": format!("{}END", "a".repeat(5000))}});
        let tail = check_tail(&check, "stdout");
        assert!(
            tail.as_str()
                .is_some_and(|t| t.ends_with("END") && t.len() == MAX_TAIL)
        );
        assert_eq!(check_tail(&check, "stderr"), Value::Null);
    }
}
