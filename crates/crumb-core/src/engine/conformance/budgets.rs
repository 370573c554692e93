//! C35–C38 and C43: budgets decided on counts that include the triggering turn. A spawn decided by an
//! event of a turn still running waits for that turn's `agent.stop`, so the token hard cap sees
//! its usage ("no turn starts once usage ≥ hard"); a fan-out round is checked as a whole and a
//! round that would cross a budget starts none of its branches.

use std::collections::VecDeque;

use super::declared::table;
use super::usage;
use crate::engine::Effect;
use crate::engine::testkit::{PASS_DIMS, Script, done_reason, scores, spawned};
use crate::transcript::{Kind, Metadata};
use crate::vocab::Verdict;

/// A writer that notes forever, each turn using `per_turn` tokens, under `tokens.hard = hard`.
fn looper(hard: u64) -> Script {
    Script::with(table(&format!(
        r"
version: 1
name: spender
roles:
  writer: {{ template: w.md.j2, produces: [note, build] }}
routes:
  - {{ on: goal, spawn: writer }}
  - {{ on: note, spawn: writer, max: 50 }}
  - {{ on: build, done: {{ outcome: pass, reason: built }} }}
limits: {{ tokens: {{ warn: {hard}, hard: {hard} }} }}
"
    )))
}

/// Run every spawn as the dispatcher does: `agent.wake`, the role's `produces` event, then
/// `agent.stop` with `per_turn` tokens. Returns the turns started and the stop reason.
fn run_turns(s: &mut Script, first: Vec<Effect>, per_turn: u64, kind: Kind) -> (u32, String) {
    let mut pending: VecDeque<Effect> = first.into();
    let mut turns = 0;
    while let Some(effect) = pending.pop_front() {
        match effect {
            Effect::Spawn(spawn) => {
                turns += 1;
                assert!(turns < 20, "the cap never stopped the session");
                let wake = Metadata {
                    effect_id: Some(spawn.id.clone()),
                    ..Metadata::default()
                };
                pending.extend(s.send(&spawn.role, Kind::AgentWake, |e| {
                    e.metadata = Some(Box::new(wake));
                }));
                pending.extend(s.send(&spawn.role, kind, |_| {}));
                let mut stop = usage(per_turn);
                stop.effect_id = Some(spawn.id.clone());
                pending.extend(s.send(&spawn.role, Kind::AgentStop, |e| {
                    e.metadata = Some(Box::new(stop));
                }));
            }
            Effect::Done(done) => return (turns, done.reason),
            _ => {}
        }
    }
    (turns, "(still running)".to_owned())
}

#[test]
fn c35_the_token_hard_cap_counts_the_turn_that_decided_the_next() {
    // 500 a turn: after two turns 1000 ≥ 900, so the third never starts.
    let mut s = looper(900);
    let goal = s.goal();
    assert_eq!(
        run_turns(&mut s, goal, 500, Kind::Note),
        (2, "token_exhausted".to_owned())
    );
    assert_eq!(s.state.budgets.tokens, 1000);
    // 1000 < 1001 allows a third; 1500 ≥ 1001 stops before a fourth.
    let mut s = looper(1001);
    let goal = s.goal();
    assert_eq!(
        run_turns(&mut s, goal, 500, Kind::Note),
        (3, "token_exhausted".to_owned())
    );
}

#[test]
fn c36_a_spawn_decided_during_a_turn_starts_when_the_turn_ends() {
    let mut s = looper(100_000);
    s.goal();
    let wake = Metadata {
        effect_id: Some("e1:0".into()),
        ..Metadata::default()
    };
    s.send("writer", Kind::AgentWake, |e| {
        e.metadata = Some(Box::new(wake));
    });
    let decided = s.send("writer", Kind::Note, |_| {});
    assert!(
        spawned(&decided).is_empty(),
        "held until the turn's usage is known"
    );
    assert_eq!(s.state.deferred.len(), 1);
    let mut stop = usage(10);
    stop.effect_id = Some("e1:0".into());
    let closed = s.send("writer", Kind::AgentStop, |e| {
        e.metadata = Some(Box::new(stop));
    });
    assert_eq!(spawned(&closed), ["writer"]);
    assert!(s.state.deferred.is_empty());
    // Without wakes (a script, `crumb check`) an event decides at once, as before.
    assert_eq!(spawned(&s.send("writer", Kind::Note, |_| {})), ["writer"]);
}

/// Three judges in parallel under `max_verify: 5`.
fn panel() -> Script {
    Script::with(table(
        r"
version: 1
name: panel
roles:
  writer: { template: w.md.j2, produces: [build] }
  judge-a: { template: a.md.j2, produces: [judge.score] }
  judge-b: { template: b.md.j2, produces: [judge.score] }
  judge-c: { template: c.md.j2, produces: [judge.score] }
routes:
  - { on: goal, spawn: writer }
  - { on: build, spawn: [judge-a, judge-b, judge-c] }
  - { on: judge.score, join: all, combine: all_pass }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, spawn: writer, with: feedback }
scoring: { pass_at: 24, partial_at: 18, guards: [] }
limits: { max_verify: 5 }
",
    ))
}

#[test]
fn c37_a_fan_out_round_that_would_pass_max_verify_starts_no_branch() {
    let mut s = panel();
    s.goal();
    assert_eq!(
        spawned(&s.send("writer", Kind::Build, |_| {})),
        ["judge-a", "judge-b", "judge-c"]
    );
    let fail = scores(
        crate::engine::testkit::FAIL_DIMS,
        Verdict::Fail,
        None,
        Some("no"),
    );
    for judge in ["judge-a", "judge-b", "judge-c"] {
        s.send(judge, Kind::JudgeScore, |e| {
            e.scores = Some(Box::new(fail.clone()));
        });
    }
    assert_eq!(s.state.verification.count, 3);
    // Round two would make six verifications: none of its three branches starts.
    let round_two = s.send("writer", Kind::Build, |_| {});
    assert!(spawned(&round_two).is_empty());
    assert_eq!(done_reason(&round_two), Some("too_many_verify"));
    assert_eq!(s.state.verification.count, 3);
}

#[test]
fn c38_a_round_that_fits_the_budget_exactly_starts_whole() {
    let mut s = panel();
    s.table.limits.max_verify = 6;
    s.goal();
    s.send("writer", Kind::Build, |_| {});
    for judge in ["judge-a", "judge-b", "judge-c"] {
        s.send(judge, Kind::JudgeScore, |e| {
            e.scores = Some(Box::new(scores(
                crate::engine::testkit::FAIL_DIMS,
                Verdict::Fail,
                None,
                Some("no"),
            )));
        });
    }
    assert_eq!(
        spawned(&s.send("writer", Kind::Build, |_| {})),
        ["judge-a", "judge-b", "judge-c"]
    );
    for judge in ["judge-a", "judge-b", "judge-c"] {
        let effects = s.send(judge, Kind::JudgeScore, |e| {
            e.scores = Some(Box::new(scores(PASS_DIMS, Verdict::Pass, None, None)));
        });
        if judge == "judge-c" {
            assert_eq!(done_reason(&effects), Some("verdict_pass"));
        }
    }
    assert_eq!(s.state.verification.count, 6);
}

#[test]
fn c43_a_round_of_planners_is_checked_against_max_respec_as_a_whole() {
    let mut s = Script::with(table(
        r"
version: 1
name: planners
roles:
  planner-a: { template: a.md.j2, produces: [spec] }
  planner-b: { template: b.md.j2, produces: [spec] }
  builder: { template: w.md.j2, produces: [build, note] }
routes:
  - { on: goal, spawn: [planner-a, planner-b] }
  - { on: spec, spawn: builder }
  - { on: build, spawn: [planner-a, planner-b], max: 5 }
  - { on: note, done: pass }
limits: { max_respec: 2 }
",
    ));
    assert_eq!(spawned(&s.goal()), ["planner-a", "planner-b"]);
    s.send("planner-a", Kind::Spec, |_| {});
    s.send("planner-b", Kind::Spec, |_| {});
    assert_eq!(s.state.budgets.respecs, 1);
    // Two more re-plans would make 3 > 2: neither planner starts.
    let round = s.send("builder", Kind::Build, |_| {});
    assert!(spawned(&round).is_empty());
    assert_eq!(done_reason(&round), Some("too_many_respec"));
}
