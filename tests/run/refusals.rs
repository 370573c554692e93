//! What `crumb run` and `crumb resume` refuse before anything runs.

use super::*;
use crumb::exit_codes::INVALID_PIPELINE;

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
