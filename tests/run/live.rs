//! A session while it runs or waits: killed and resumed, and inbox lines (veto, approve, pause,
//! direct messages, goto) applied exactly once.

use super::*;

#[test]
fn kill_and_resume_completes_without_losing_or_repeating_anything() {
    // Kill points: mid-planner, mid-builder, after the build (QA / verifier), mid-verifier.
    let points: [(&str, Ready); 4] = [
        ("planner running", |e| {
            count(e, "planner-lead", "agent.wake") == 1
        }),
        ("builder running", |e| {
            count(e, "builder", "agent.wake") == 1
        }),
        ("build written", |e| count(e, "builder", "build") == 1),
        ("verifier running", |e| {
            count(e, "verifier", "agent.wake") == 1
        }),
    ];
    for (name, ready) in points {
        let scratch = Scratch::new();
        let session = kill_mid_run(&scratch, ready);
        let resumed = scratch
            .command(&["resume", "--json"])
            .env("CRUMB_MOCK_DELAY_MS", "50")
            .arg(&session)
            .run();
        assert_eq!(
            resumed.code, 0,
            "resume after a kill at `{name}`:\n{}\n{}",
            resumed.stdout, resumed.stderr
        );
        assert_eq!(
            summary(&resumed)["reason"],
            "verdict_pass",
            "kill at `{name}`"
        );
        let events = transcript(&session);
        assert_effects_once(&events);
        for (from, kind) in [
            ("planner-lead", "spec"),
            ("builder", "build"),
            ("system", "qa.result"),
            ("verifier", "judge.score"),
        ] {
            assert_eq!(
                count(&events, from, kind),
                1,
                "kill at `{name}`: exactly one {kind}"
            );
        }
        for role in ["planner-lead", "builder", "verifier"] {
            assert_eq!(
                count(&events, role, "agent.stop"),
                1,
                "kill at `{name}`: {role} stopped once"
            );
        }
    }
}

#[test]
fn veto_and_approve_sent_to_a_live_waiting_session_each_apply_once() {
    let scratch = Scratch::new();
    let (child, session) = partial_run_awaiting(&scratch);
    scratch.say(&session, "/veto the difficulty never ramps up");
    wait_until_awaiting(&session, 2);
    scratch.say(&session, "/approve");
    expect_exit(child, 0);
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(of_kind(&events, "user.veto").len(), 1);
    assert_eq!(of_kind(&events, "user.approve").len(), 1);
    assert_eq!(
        of_kind(&events, "ack").len(),
        2,
        "each line acknowledged once"
    );
    assert_eq!(
        count(&events, "builder", "build"),
        2,
        "the veto repaired the build once"
    );
    let repair = std::fs::read_to_string(session.join("prompts/builder-2.md")).unwrap();
    assert!(repair.contains("the difficulty never ramps up"));
}

#[test]
fn pause_and_resume_mid_run_hold_and_release_the_next_spawn_once() {
    let scratch = Scratch::new();
    let (child, session) = run_until(&scratch, |e| count(e, "builder", "agent.wake") == 1);
    scratch.say(&session, "/pause");
    let held = |e: &[Value]| {
        of_kind(e, "hook")
            .iter()
            .any(|h| h["data"]["hook"] == "queued")
    };
    wait_for(|| Some(session.clone()), held);
    assert_eq!(
        count(&transcript(&session), "verifier", "agent.wake"),
        0,
        "held while paused"
    );
    scratch.say(&session, "/resume");
    expect_exit(child, 0);
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(of_kind(&events, "user.pause").len(), 1);
    assert_eq!(of_kind(&events, "user.resume").len(), 1);
    assert_eq!(of_kind(&events, "ack").len(), 2);
    assert_eq!(
        count(&events, "verifier", "agent.wake"),
        1,
        "released exactly once"
    );
}

#[test]
fn a_direct_message_waits_for_its_role_s_next_turn_and_goto_spawns_once() {
    let scratch = Scratch::new();
    let (child, session) = partial_run_awaiting(&scratch);
    let wakes = of_kind(&transcript(&session), "agent.wake").len();
    // While the verdict awaits a person, `@builder …` is queued, not a wake.
    scratch.say(&session, "@builder make the gems bigger");
    wait_for(|| Some(session.clone()), |e| of_kind(e, "ack").len() == 1);
    let acked = transcript(&session);
    let ack = &of_kind(&acked, "ack")[0];
    assert!(
        ack["body"]
            .as_str()
            .unwrap()
            .contains("queued for @builder's next turn"),
        "{ack}"
    );
    assert_eq!(
        of_kind(&acked, "agent.wake").len(),
        wakes,
        "no turn started"
    );
    // `/goto` starts the planner; the spec route then starts the builder with the message.
    scratch.say(&session, "/goto planner-lead start over with a dodger");
    wait_until_awaiting(&session, 2);
    // `crumb say` refuses an unknown role itself; a line written straight into the inbox (as any
    // other writer could) must still be answered, with an error ack.
    {
        use std::io::Write;
        let mut inbox = std::fs::OpenOptions::new()
            .append(true)
            .open(session.join("inbox.txt"))
            .unwrap();
        inbox.write_all(b"@nobody hello\n").unwrap();
    }
    wait_for(|| Some(session.clone()), |e| of_kind(e, "ack").len() == 3);
    scratch.say(&session, "/approve");
    expect_exit(child, 0);
    let events = transcript(&session);
    assert_effects_once(&events);
    let builder_two = std::fs::read_to_string(session.join("prompts/builder-2.md")).unwrap();
    assert!(builder_two.contains("make the gems bigger"));
    assert!(
        !session.join("prompts/builder-3.md").exists(),
        "the message woke no builder turn of its own"
    );
    let planner_two = std::fs::read_to_string(session.join("prompts/planner-lead-2.md")).unwrap();
    assert!(planner_two.contains("start over with a dodger"));
    let acks = of_kind(&events, "ack");
    assert!(
        acks.iter()
            .any(|a| a["data"]["ok"] == false && a["body"].as_str().unwrap().contains("nobody")),
        "unknown role answered with an error ack"
    );
    assert_eq!(
        of_kind(&events, "user.intervene").len(),
        2,
        "the bad line became an ack, not an event"
    );
}
