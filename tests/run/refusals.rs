//! What `crumb run` and `crumb resume` refuse before anything runs.

use super::*;
use crumb::exit_codes::INVALID_PIPELINE;
use serde_json::json;

#[test]
fn invalid_pipelines_unknown_adapters_and_bad_binds_are_refused_before_anything_runs() {
    let scratch = Scratch::new();
    let broken = scratch.dir.path().join("pipelines/broken.yaml");
    std::fs::write(
        &broken,
        "version: 1\nname: broken\nroles: {}\nroutes: [[[\n",
    )
    .unwrap();
    let run = scratch
        .command(&["run"])
        .arg(&broken)
        .arg(PITCH)
        .run()
        .expect_code(i32::from(INVALID_PIPELINE));
    assert!(
        run.stderr.contains("not a valid pipeline"),
        "{}",
        run.stderr
    );
    // Each bad option, and what the usage error must say about it ("" = only the exit code).
    for (option, says) in [
        (["--adapter", "gpt"], "unknown adapter `gpt`"),
        (["--bind", "ghost=mock"], "unknown role `ghost`"),
        (["--preset", "../etc"], ""),
        (["--mock-scenario", "explode"], ""),
    ] {
        let run = scratch
            .command(&["run"])
            .arg(scratch.pipeline())
            .arg(PITCH)
            .args(option)
            .run()
            .expect_code(2);
        assert!(run.stderr.contains(says), "{option:?}: {}", run.stderr);
    }
    assert!(
        !scratch.home().join("projects").exists(),
        "no session was created"
    );
}

#[test]
fn resume_refuses_unknown_sessions_and_a_live_coordinator() {
    let scratch = Scratch::new();
    scratch
        .command(&["resume", "01ZZZZZZZZZZZZZZZZZZZZZZZZ"])
        .run()
        .expect_code(2);
    let (child, session) = partial_run_awaiting(&scratch);
    let second = scratch
        .command(&["resume"])
        .arg(&session)
        .run()
        .expect_code(2);
    assert!(
        second.stderr.contains("already driven"),
        "{}",
        second.stderr
    );
    child.kill();
}

/// `crumb run` records each role's `produces` in `authority.json` when it creates the session;
/// without the record (an older session) `crumb event` compiles the frozen pipeline instead.
#[test]
fn the_firewall_knows_the_sessions_roles_with_or_without_the_authority_record() {
    let scratch = Scratch::new();
    scratch.run("pass", &[]).expect_code(0);
    let session = scratch.session();
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("authority.json")).unwrap())
            .unwrap();
    assert_eq!(
        record,
        json!({
            "roles": {"planner-lead": ["spec"], "builder": ["build"], "verifier": ["judge.score"]},
            "common": ["note", "agent.thought_summary"],
            // `limits.max_store_mb` (its default): the cap `crumb event` holds the store to.
            "store_cap_mb": 256
        })
    );
    for with_record in [true, false] {
        if !with_record {
            std::fs::remove_file(session.join("authority.json")).unwrap();
        }
        let event = |draft: &str| {
            crumb()
                .arg("event")
                .turn(&session, "builder")
                .stdin(draft)
                .run()
        };
        event(r#"{"kind":"judge.score","scores":{"verdict":"PASS"}}"#).expect_code(2);
        event(r#"{"kind":"note","body":"fine"}"#).expect_code(0);
    }
}

/// A session whose frozen pipeline is gone replays only against the pipeline whose hash
/// `session.start` recorded; another file is refused, naming both hashes, unless `--force`.
#[test]
fn replay_checks_the_pipeline_hash_session_start_recorded() {
    let scratch = Scratch::new();
    scratch.run("pass", &[]).expect_code(0);
    let session = scratch.session();
    let recorded = transcript(&session)
        .into_iter()
        .find(|e| e["kind"] == "session.start")
        .and_then(|e| e["data"]["pipeline_hash"].as_str().map(str::to_owned))
        .unwrap();
    std::fs::remove_dir_all(session.join("pipeline")).unwrap();
    let replay = |extra: &[&str]| scratch.command(&["replay"]).arg(&session).args(extra).run();
    let run = replay(&[]).expect_code(2);
    assert!(
        run.stderr.contains(&recorded) && run.stderr.contains("--pipeline FILE"),
        "{}",
        run.stderr
    );
    let own = scratch.pipeline();
    let run = replay(&["--pipeline", own.to_str().unwrap()]).expect_code(0);
    assert!(
        run.stdout.contains("hash matches session.start"),
        "{}",
        run.stdout
    );
    let other = repo_root().join("pipelines/casual.yaml");
    let run = replay(&["--pipeline", other.to_str().unwrap()]).expect_code(2);
    assert!(
        run.stderr.contains(&recorded)
            && run.stderr.contains("differs")
            && run.stderr.contains("--force"),
        "{}",
        run.stderr
    );
    let run = replay(&["--pipeline", other.to_str().unwrap(), "--force"]).expect_code(0);
    assert!(run.stdout.contains("with --force"), "{}", run.stdout);
}

/// Every coordinator start revokes the capabilities issued before it: a token a turn of an
/// earlier run held (here one still registered, as a killed run leaves it) writes nothing after
/// `crumb resume`, and the attempt is recorded.
#[test]
fn a_resume_revokes_every_capability_issued_before_it() {
    let scratch = Scratch::new();
    summary(&scratch.run("partial", &[]).expect_code(10));
    let session = scratch.session();
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let stale = crate::support::open_turn(&session, &id, "builder");
    let note = || {
        crumb()
            .arg("event")
            .env("CRUMB_CAPABILITY", stale.token())
            .stdin(r#"{"kind":"note","body":"still here"}"#)
            .run()
    };
    note().expect_code(0);
    scratch.say(&session, "/approve");
    assert_eq!(summary(&scratch.resume(&session))["reason"], "approved");
    let run = note().expect_code(2);
    assert!(run.stderr.contains("not registered"), "{}", run.stderr);
    let events = transcript(&session);
    assert_eq!(
        events.last().unwrap()["data"]["violation"],
        "invalid_capability_attempt"
    );
    assert_eq!(
        events.iter().filter(|e| e["body"] == "still here").count(),
        1,
        "only the write before the resume"
    );
}
