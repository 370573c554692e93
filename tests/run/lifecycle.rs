//! Sessions bent by a kill at the worst moment of their start or end, built by cutting a real
//! session's files: `crumb ls`, `crumb run`'s auto-resume and `crumb resume` must agree that a
//! transcript ending in `session.end` is finished, complete a missing `session.end`, skip (saying
//! why) what cannot be resumed, and never show a folder still being built.

use super::*;

/// A finished pass run whose files are then bent by `bend` (given the transcript's lines), with
/// meta put back to `running` as a killed coordinator leaves it.
pub(super) fn bent_session(
    scratch: &Scratch,
    bend: impl FnOnce(Vec<String>) -> Vec<String>,
) -> PathBuf {
    scratch.run("pass", &[]).expect_code(0);
    let session = scratch.session();
    let path = session.join("transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = bend(text.lines().map(str::to_owned).collect());
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    let meta_path = session.join("meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["status"] = "running".into();
    std::fs::write(&meta_path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    session
}

fn ls_status(scratch: &Scratch) -> Vec<String> {
    let run = scratch.command(&["ls", "--json"]).run().expect_code(0);
    let listed: Value = serde_json::from_str(&run.stdout).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap().to_owned())
        .collect()
}

pub(super) fn session_count(scratch: &Scratch) -> usize {
    let projects = scratch.home().join("projects");
    std::fs::read_dir(projects)
        .unwrap()
        .map(|project| {
            std::fs::read_dir(project.unwrap().path().join("sessions"))
                .unwrap()
                .count()
        })
        .sum()
}

#[test]
fn a_transcript_ending_in_session_end_is_done_whatever_meta_says() {
    let scratch = Scratch::new();
    bent_session(&scratch, |lines| lines);
    assert_eq!(ls_status(&scratch), ["done"]);
    let run = scratch.run("pass", &[]).expect_code(0);
    assert!(!run.stderr.contains("resuming"), "{}", run.stderr);
    assert_eq!(
        session_count(&scratch),
        2,
        "a fresh session, not the old verdict"
    );
}

#[test]
fn resume_completes_a_missing_session_end_and_exits_with_the_outcome() {
    let scratch = Scratch::new();
    let session = bent_session(&scratch, |mut lines| {
        let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        assert_eq!(last["kind"], "session.end");
        lines.pop();
        lines
    });
    assert_eq!(ls_status(&scratch), ["dead"]);
    let resumed = scratch.resume(&session);
    assert_eq!(summary(&resumed)["outcome"], "pass");
    let events = transcript(&session);
    assert_eq!(of_kind(&events, "done").len(), 1);
    assert_eq!(of_kind(&events, "session.end").len(), 1);
    assert_eq!(events.last().unwrap()["kind"], "session.end");
    assert_eq!(ls_status(&scratch), ["done"]);
}

/// `crumb run` of the same pitch passes over the bent session, saying why, and starts afresh.
fn auto_resume_skips(bend: impl FnOnce(Vec<String>) -> Vec<String>, why: &str) {
    let scratch = Scratch::new();
    bent_session(&scratch, bend);
    let run = scratch.run("pass", &[]).expect_code(0);
    let line = format!("cannot be resumed: {why}; starting a fresh one");
    assert!(run.stderr.contains(&line), "{}", run.stderr);
    assert_eq!(session_count(&scratch), 2);
}

#[test]
fn auto_resume_skips_an_empty_transcript_and_says_why() {
    auto_resume_skips(
        |_| Vec::new(),
        "its transcript is empty (its run was killed while it started)",
    );
}

#[test]
fn auto_resume_skips_a_session_without_a_goal() {
    auto_resume_skips(|lines| lines[..1].to_vec(), "its transcript has no goal");
}

#[test]
fn resume_refuses_a_session_without_a_goal_instead_of_stalling() {
    let scratch = Scratch::new();
    let session = bent_session(&scratch, |lines| lines[..1].to_vec());
    let run = scratch.command(&["resume"]).arg(&session).run();
    let why = "its transcript has no goal; it cannot be resumed";
    assert!(run.code == 1 && run.stderr.contains(why), "{}", run.stderr);
}

#[test]
fn session_start_and_goal_are_one_append_and_no_building_folder_is_left() {
    let scratch = Scratch::new();
    scratch.run("pass", &[]).expect_code(0);
    let events = transcript(&scratch.session());
    assert_eq!(events[0]["kind"], "session.start");
    assert_eq!(events[1]["kind"], "goal");
    assert!(events[0]["id"].as_str() < events[1]["id"].as_str());
}

#[test]
fn abandoned_building_folders_are_swept_and_never_listed() {
    let scratch = Scratch::new();
    scratch.run("pass", &[]).expect_code(0);
    let sessions = scratch.session().parent().unwrap().to_path_buf();
    let abandoned = sessions.join(".tmp-01JAAAAAAAAAAAAAAAAAAAAAAA");
    let fresh = sessions.join(".tmp-01JBBBBBBBBBBBBBBBBBBBBBBB");
    for dir in [&abandoned, &fresh] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join("transcript.jsonl"), "").unwrap();
    }
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(&abandoned)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let run = scratch.command(&["ls"]).run().expect_code(0);
    assert!(!run.stderr.contains(".tmp-"), "{}", run.stderr);
    assert!(
        !abandoned.exists(),
        "an old, unlocked building folder is swept"
    );
    assert!(fresh.exists(), "a recent one may still be being built");
    assert_eq!(ls_status(&scratch), ["done"]);
}

#[test]
fn auto_resume_says_when_the_same_pitch_is_still_driven_elsewhere() {
    let scratch = Scratch::new();
    let session = bent_session(&scratch, |mut lines| {
        lines.truncate(lines.len() - 2);
        lines
    });
    // Another coordinator (this live test process) holding the session's lock, as a second
    // `crumb run` of the pitch would.
    let lock = crumb::runtime::lock::CoordinatorLock::acquire(&session).unwrap();
    let run = scratch.run("pass", &[]).expect_code(0);
    let line = "is still driven by another coordinator (its lock is held); starting a fresh one";
    assert!(run.stderr.contains(line), "{}", run.stderr);
    assert_eq!(session_count(&scratch), 2);
    lock.release();
}

#[test]
fn auto_resume_says_when_the_pipeline_changed_since_the_dead_session() {
    let scratch = Scratch::new();
    bent_session(&scratch, |mut lines| {
        lines.truncate(lines.len() - 2);
        lines
    });
    let pipeline = scratch.pipeline();
    let text = std::fs::read_to_string(&pipeline).unwrap();
    std::fs::write(&pipeline, text.replace("max_verify: 5", "max_verify: 4")).unwrap();
    let run = scratch.run("pass", &[]).expect_code(0);
    let line = "ran another version of the pipeline (it changed since); starting a fresh one";
    assert!(run.stderr.contains(line), "{}", run.stderr);
    assert_eq!(session_count(&scratch), 2);
}

#[test]
fn auto_resume_says_when_the_same_pitch_waits_for_a_person() {
    let scratch = Scratch::new();
    scratch.run("partial", &[]).expect_code(10);
    let id = scratch.session_id();
    let run = scratch.run("partial", &[]).expect_code(10);
    let line = format!(
        "session {id} for the same pitch is waiting for a person (`crumb say {id} /approve`, then `crumb resume {id}`); starting a fresh one"
    );
    assert!(run.stderr.contains(&line), "{}", run.stderr);
    assert_eq!(session_count(&scratch), 2);
}
