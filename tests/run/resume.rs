//! Resuming: damaged transcripts, a missing header, Ctrl-C mid-turn, and `crumb run` picking up a
//! dead coordinator's session.

use super::*;

#[test]
fn resume_skips_a_torn_or_garbage_transcript_line_and_still_finishes() {
    let scratch = Scratch::new();
    scratch.run("partial", &[]).expect_code(10);
    let session = scratch.session();
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(session.join("transcript.jsonl"))
            .unwrap();
        file.write_all(b"{\"id\": garbage \xff\xfe\n{\"half\": ")
            .unwrap();
    }
    scratch.say(&session, "/approve");
    let resumed = scratch.resume(&session);
    assert_eq!(summary(&resumed)["reason"], "approved");
    assert!(
        resumed.stderr.contains("unreadable transcript line"),
        "the skipped lines are reported: {}",
        resumed.stderr
    );
    let text = std::fs::read(session.join("transcript.jsonl")).unwrap();
    let readable: Vec<Value> = text
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    assert_eq!(of_kind(&readable, "done").len(), 1);
    assert_eq!(readable.last().unwrap()["kind"], "session.end");
}

#[test]
fn a_session_without_its_header_cannot_be_resumed_and_says_why() {
    let scratch = Scratch::new();
    scratch.run("partial", &[]).expect_code(10);
    let session = scratch.session();
    std::fs::write(session.join("transcript.jsonl"), b"").unwrap();
    let resumed = scratch
        .command(&["resume"])
        .arg(&session)
        .run()
        .expect_code(1);
    assert!(
        resumed.stderr.contains("session.start"),
        "{}",
        resumed.stderr
    );
}

#[test]
fn ctrl_c_stops_the_live_turn_without_recording_it_and_resume_redoes_it() {
    use nix::sys::signal::Signal;
    let scratch = Scratch::new();
    let (child, session) = run_until(&scratch, |e| count(e, "builder", "agent.wake") == 1);
    child.signal(Signal::SIGINT);
    expect_exit(child, 130);
    let events = transcript(&session);
    assert_eq!(
        count(&events, "builder", "agent.stop"),
        0,
        "the cut-short turn has no outcome"
    );
    assert!(
        of_kind(&events, "done").is_empty(),
        "an interruption is not an ending"
    );
    assert!(
        !session.join("logs/builder-1.pgid").exists(),
        "the builder's process group was stopped and unregistered"
    );
    let resumed = scratch.resume(&session);
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(count(&events, "builder", "build"), 1);
    assert_eq!(count(&events, "builder", "agent.stop"), 1);
}

#[test]
fn run_resumes_a_dead_coordinator_s_session_of_the_same_pipeline_and_pitch() {
    let scratch = Scratch::new();
    let session = kill_mid_run(&scratch, |e| count(e, "builder", "agent.wake") == 1);
    let sessions_dir = session.parent().unwrap().to_path_buf();
    let sessions = || std::fs::read_dir(&sessions_dir).unwrap().count();

    // Another pitch is another job: a fresh session, the dead one left alone.
    let other = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("a different pitch")
        .args(["--adapter", "mock", "--json"])
        .run()
        .expect_code(0);
    assert!(!other.stderr.contains("resuming"), "{}", other.stderr);
    assert_eq!(sessions(), 2);

    let resumed = scratch.run("pass", &[]).expect_code(0);
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        resumed.stderr.contains(&format!("resuming session {id}")),
        "one line says so: {}",
        resumed.stderr
    );
    assert_eq!(summary(&resumed)["session_id"], id.as_str());
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    assert_eq!(sessions(), 2, "no new session");
    let events = transcript(&session);
    assert_effects_once(&events);
    for (from, kind) in [("builder", "build"), ("verifier", "judge.score")] {
        assert_eq!(count(&events, from, kind), 1, "exactly one {kind}");
    }

    // Done now: the next run of the same pitch starts afresh, and so does `--new`.
    let again = scratch.run("pass", &[]).expect_code(0);
    assert_ne!(summary(&again)["session_id"], id.as_str());
    assert_eq!(sessions(), 3);
}

#[test]
fn run_new_starts_fresh_even_when_a_dead_session_matches() {
    let scratch = Scratch::new();
    let session = kill_mid_run(&scratch, |e| count(e, "planner-lead", "agent.wake") == 1);
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let fresh = scratch.run("pass", &["--new"]).expect_code(0);
    assert!(!fresh.stderr.contains("resuming"), "{}", fresh.stderr);
    assert_ne!(summary(&fresh)["session_id"], id.as_str());
}

/// A turn whose adapter had said something about the request (a `note` carrying the turn's effect
/// id, as an effort level a CLI lacks does) when its coordinator was killed mid-turn: the note is
/// not the turn's outcome, so resume redoes the turn instead of taking it as done and stalling.
#[test]
fn a_turn_killed_after_its_adapter_note_is_redone_on_resume() {
    use crumb::transcript::writer::Writer;
    use crumb::transcript::{Draft, Kind, Metadata};
    let scratch = Scratch::new();
    // A whole run cut back to just after the builder's wake: its coordinator died mid-turn.
    let session = super::lifecycle::bent_session(&scratch, |mut lines| {
        let wake = lines
            .iter()
            .position(|l| l.contains(r#""from":"builder","kind":"agent.wake""#))
            .expect("the builder woke");
        lines.truncate(wake + 1);
        lines
    });
    let events = transcript(&session);
    let wake = events.last().unwrap();
    let mut data = serde_json::Map::new();
    data.insert("role".into(), "builder".into());
    data.insert("adapter".into(), "mock".into());
    let note = Draft::new("system", Kind::Note)
        .body("mock has no `max` effort: running at `high`")
        .data(data)
        .metadata(Metadata {
            deterministic: Some(true),
            tool: Some("crumb-dispatcher@v1".into()),
            effect_id: wake["metadata"]["effect_id"].as_str().map(str::to_owned),
            ..Metadata::default()
        });
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    Writer::open(session.join("transcript.jsonl"), id)
        .unwrap()
        .append(note)
        .unwrap();
    let resumed = scratch.resume(&session);
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    let events = transcript(&session);
    assert_eq!(count(&events, "builder", "build"), 1, "the turn was redone");
    assert_eq!(count(&events, "builder", "agent.stop"), 1);
}
