//! Failures no retry can fix (an error with `data.retryable: false`: auth, input too large, no
//! network) are not retried and do not swap to a fallback on the same adapter; they stop the
//! role with `agent_<class>:<role>`, or swap at once to a fallback on another adapter.

use serde_json::json;

use crate::engine::testkit::{Script, appended, data, done_reason, spawned};
use crate::transcript::Kind;

/// The builder bound to `claude-code`, a goal and a spec: the builder has just been spawned.
fn builder_on_claude(s: &mut Script) {
    s.send("system", Kind::SessionStart, |e| {
        e.data = Some(data(json!({"bindings": {
            "builder": {"adapter": "claude-code", "harness": "claude-code", "provider": "anthropic", "decided_by": "--adapter"}
        }})));
    });
    s.goal();
    s.spec();
}

fn fatal_error(s: &mut Script, class: &str) -> Vec<crate::engine::effect::Effect> {
    s.send("system", Kind::Error, |e| {
        e.data = Some(data(json!({
            "role": "builder", "reason": "exit_nonzero", "class": class, "retryable": false
        })));
    })
}

#[test]
fn an_auth_failure_stops_the_role_without_retrying() {
    let mut s = Script::new();
    builder_on_claude(&mut s);
    let effects = fatal_error(&mut s, "auth");
    assert!(spawned(&effects).is_empty(), "no retry: {effects:?}");
    assert_eq!(done_reason(&effects), Some("agent_auth:builder"));
}

#[test]
fn a_fallback_on_the_same_adapter_is_skipped_and_another_adapter_taken_at_once() {
    for (fallback, expected) in [("claude-code", None), ("codex", Some("codex"))] {
        let mut s = Script::with(super::with_builder_fallback(fallback));
        builder_on_claude(&mut s);
        let effects = fatal_error(&mut s, "network");
        match expected {
            None => assert_eq!(done_reason(&effects), Some("agent_network:builder")),
            Some(adapter) => {
                assert_eq!(spawned(&effects), ["builder"]);
                let audit = appended(&effects, Kind::Audit);
                let swap = audit[0].data.as_ref().expect("data");
                assert_eq!(swap["new_adapter"], json!(adapter));
                assert_eq!(swap["reason"], json!("network"));
            }
        }
    }
}

#[test]
fn a_retryable_class_is_retried_as_before() {
    let mut s = Script::new();
    builder_on_claude(&mut s);
    let effects = s.send("system", Kind::Error, |e| {
        e.data = Some(data(json!({
            "role": "builder", "reason": "exit_nonzero", "class": "quota", "retryable": true
        })));
    });
    assert_eq!(spawned(&effects), ["builder"]);
}
