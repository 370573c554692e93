//! Pipeline inputs end to end: `--set`/`--input` values type-checked before anything is created,
//! recorded in `session.start`, rendered into the agent's prompt, kept by `crumb resume` (which
//! never reads the command line again) and shown by `crumb status`.

use super::*;

/// The scratch project with the casual pipeline declaring two inputs that its builder's prompt
/// reads.
fn with_inputs() -> Scratch {
    let scratch = Scratch::new();
    let pipeline = scratch.pipeline();
    let text = std::fs::read_to_string(&pipeline).unwrap();
    let text = text
        .replace(
            "../templates/builder.md.j2",
            "../templates/builder-inputs.md.j2",
        )
        .replacen(
            "roles:",
            "inputs:\n  audience: { description: Who plays it }\n  rounds: { type: integer, default: 2 }\n\nroles:",
            1,
        );
    std::fs::write(&pipeline, text).unwrap();
    std::fs::write(
        scratch.dir.path().join("templates/builder-inputs.md.j2"),
        "{% include \"builder.md.j2\" %}\n\nAUDIENCE={{ inputs.audience }} ROUNDS={{ inputs.rounds }}\n",
    )
    .unwrap();
    scratch
}

fn sessions_created(scratch: &Scratch) -> usize {
    let projects = scratch.home().join("projects");
    let Ok(projects) = std::fs::read_dir(projects) else {
        return 0;
    };
    projects
        .filter_map(|p| std::fs::read_dir(p.ok()?.path().join("sessions")).ok())
        .map(Iterator::count)
        .sum()
}

#[test]
fn set_values_reach_the_prompt_and_resume_keeps_the_recorded_ones() {
    let scratch = with_inputs();
    let run = scratch
        .run("partial", &["--set", "audience=kids", "--set", "rounds=3"])
        .expect_code(10);
    assert_eq!(
        summary(&run)["inputs"],
        serde_json::json!({"audience": "kids", "rounds": 3})
    );
    let session = scratch.session();
    let events = transcript(&session);
    assert_eq!(
        of_kind(&events, "session.start")[0]["data"]["inputs"],
        serde_json::json!({"audience": "kids", "rounds": 3})
    );
    let prompt = std::fs::read_to_string(session.join("prompts/builder-1.md")).unwrap();
    assert!(prompt.contains("AUDIENCE=kids ROUNDS=3"), "{prompt}");

    // A veto sends the build back: the resumed session renders the builder's prompt again,
    // from the recorded values, even though the pipeline in the project now says otherwise.
    let source = std::fs::read_to_string(scratch.pipeline()).unwrap();
    std::fs::write(
        scratch.pipeline(),
        source.replace("default: 2", "default: 9"),
    )
    .unwrap();
    scratch.say(&session, "/veto make it slower");
    let resumed = scratch.command(&["resume"]).arg(&session).run();
    assert!(
        resumed
            .stdout
            .contains("input    audience = \"kids\" (recorded)"),
        "{}",
        resumed.stdout
    );
    let again = std::fs::read_to_string(session.join("prompts/builder-2.md")).unwrap();
    assert!(again.contains("AUDIENCE=kids ROUNDS=3"), "{again}");

    let status = scratch
        .command(&["status", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    let status: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["inputs"]["rounds"], 3);
    let exported = scratch
        .command(&["export", "--format", "md"])
        .arg(&session)
        .run()
        .expect_code(0);
    assert!(
        exported
            .stdout
            .contains("- **inputs**: audience = \"kids\", rounds = 3"),
        "{}",
        exported.stdout
    );
}

#[test]
fn an_input_file_gives_values_and_set_wins_over_it() {
    let scratch = with_inputs();
    let file = scratch.dir.path().join("inputs.json");
    std::fs::write(&file, r#"{"audience": "teachers", "rounds": 4}"#).unwrap();
    let run = scratch
        .run(
            "pass",
            &["--input", file.to_str().unwrap(), "--set", "rounds=5"],
        )
        .expect_code(0);
    assert_eq!(
        summary(&run)["inputs"],
        serde_json::json!({"audience": "teachers", "rounds": 5})
    );
}

#[test]
fn bad_inputs_are_refused_before_anything_is_created() {
    let scratch = with_inputs();
    let refused = scratch
        .run("pass", &["--set", "rounds=abc", "--set", "audiense=kids"])
        .expect_code(2);
    let err = &refused.stderr;
    assert!(
        err.contains("input `rounds` (from --set) must be an integer: `abc` is not a whole number"),
        "{err}"
    );
    assert!(
        err.contains("unknown input `audiense` (from --set); did you mean `audience`?"),
        "{err}"
    );
    assert!(err.contains("input `audience` is required"), "{err}");
    assert!(err.contains("nothing was started"), "{err}");
    assert_eq!(sessions_created(&scratch), 0);

    let malformed = scratch.run("pass", &["--set", "audience"]).expect_code(2);
    assert!(
        malformed.stderr.contains("`audience` is not NAME=VALUE"),
        "{}",
        malformed.stderr
    );
    let goal = scratch
        .run("pass", &["--set", "audience=a", "--set", "goal=x"])
        .expect_code(2);
    assert!(
        goal.stderr.contains("positional argument"),
        "{}",
        goal.stderr
    );
    assert_eq!(sessions_created(&scratch), 0);
}

#[test]
fn a_dry_run_takes_and_shows_the_inputs() {
    let scratch = with_inputs();
    let run = scratch
        .command(&["run", "--dry-run", "--script", "PASS"])
        .arg(scratch.pipeline())
        .arg(PITCH)
        .args(["--set", "audience=kids"])
        .run()
        .expect_code(0);
    assert!(
        run.stdout.contains("input    audience = \"kids\""),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("input    rounds = 2"), "{}", run.stdout);
}

#[test]
fn batch_entries_set_inputs_checked_before_any_child_starts() {
    let scratch = with_inputs();
    let pitches = scratch.dir.path().join("pitches.yaml");
    let batch = |text: &str| {
        std::fs::write(&pitches, text).unwrap();
        scratch
            .command(&["batch", "--json"])
            .arg(scratch.pipeline())
            .arg(&pitches)
            .args(["--adapter", "mock", "--mock-scenario", "pass"])
            .run()
    };
    let refused = batch("- { pitch: a dodger, set: { audience: kids } }\n- { pitch: a tapper, set: { rounds: many } }\n")
        .expect_code(2);
    assert!(
        refused.stderr.contains("pitch 2 (a tapper)"),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("input `rounds` (from --set) must be an integer"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("input `audience` is required"),
        "{}",
        refused.stderr
    );
    assert_eq!(sessions_created(&scratch), 0);

    batch("- { pitch: a dodger, set: { audience: kids } }\n- { pitch: a tapper, set: { audience: teachers, rounds: 4 } }\n")
        .expect_code(0);
    let mut recorded: Vec<Value> = Vec::new();
    for project in std::fs::read_dir(scratch.home().join("projects")).unwrap() {
        for session in std::fs::read_dir(project.unwrap().path().join("sessions")).unwrap() {
            let events = transcript(&session.unwrap().path());
            recorded.push(of_kind(&events, "session.start")[0]["data"]["inputs"].clone());
        }
    }
    recorded.sort_by_key(ToString::to_string);
    assert_eq!(
        recorded,
        [
            serde_json::json!({"audience": "kids", "rounds": 2}),
            serde_json::json!({"audience": "teachers", "rounds": 4}),
        ]
    );
}

#[test]
fn a_fork_keeps_the_recorded_inputs_and_may_set_some_again() {
    let scratch = with_inputs();
    scratch
        .run("partial", &["--set", "audience=kids", "--set", "rounds=3"])
        .expect_code(10);
    let parent = scratch.session();
    let events = transcript(&parent);
    let goal = of_kind(&events, "goal")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let fork = |extra: &[&str]| {
        scratch
            .command(&["fork", "--json", "--mock-scenario", "pass", "--at", &goal])
            .arg(&parent)
            .args(extra)
            .run()
    };
    let refused = fork(&["--set", "rounds=lots"]).expect_code(2);
    assert!(
        refused.stderr.contains("must be an integer"),
        "{}",
        refused.stderr
    );
    let forked = fork(&["--set", "rounds=7"]).expect_code(0);
    let folder = PathBuf::from(summary(&forked)["folder"].as_str().unwrap());
    let events = transcript(&folder);
    let start = &of_kind(&events, "session.start")[0]["data"]["inputs"];
    assert_eq!(*start, serde_json::json!({"audience": "kids", "rounds": 7}));
    let prompt = std::fs::read_to_string(folder.join("prompts/builder-1.md")).unwrap();
    assert!(prompt.contains("AUDIENCE=kids ROUNDS=7"), "{prompt}");
}

#[test]
fn a_declared_goal_default_makes_the_pitch_optional() {
    let scratch = with_inputs();
    let no_goal = scratch
        .command(&["run", "--adapter", "mock", "--json"])
        .arg(scratch.pipeline())
        .args(["--set", "audience=kids"])
        .run()
        .expect_code(2);
    assert!(
        no_goal.stderr.contains("a goal is required"),
        "{}",
        no_goal.stderr
    );
    let text = std::fs::read_to_string(scratch.pipeline()).unwrap();
    std::fs::write(
        scratch.pipeline(),
        text.replacen(
            "inputs:\n",
            "inputs:\n  goal: { description: The game, default: a tiny dodger }\n",
            1,
        ),
    )
    .unwrap();
    scratch
        .command(&["run", "--adapter", "mock", "--json"])
        .arg(scratch.pipeline())
        .args(["--set", "audience=kids"])
        .run()
        .expect_code(0);
    let events = transcript(&scratch.session());
    assert_eq!(of_kind(&events, "goal")[0]["body"], "a tiny dodger");
}

#[test]
fn a_dead_session_of_the_same_pitch_is_taken_over_only_with_the_same_inputs() {
    let scratch = with_inputs();
    let child = scratch.spawn_run("pass", 300, &["--set", "audience=kids"]);
    let home = scratch.home();
    let session = wait_for(
        || any_session(&home),
        |e| count(e, "builder", "agent.wake") == 1,
    );
    child.kill();
    let id = session.file_name().unwrap().to_string_lossy().into_owned();

    let other = scratch
        .run("pass", &["--set", "audience=teachers"])
        .expect_code(0);
    assert!(
        other.stderr.contains(&format!(
            "session {id} has the same pitch but other inputs; starting a fresh one"
        )),
        "{}",
        other.stderr
    );
    assert_ne!(summary(&other)["session_id"], id.as_str());

    let same = scratch
        .run("pass", &["--set", "audience=kids"])
        .expect_code(0);
    assert!(
        same.stderr.contains(&format!("resuming session {id}")),
        "{}",
        same.stderr
    );
    assert_eq!(summary(&same)["session_id"], id.as_str());
}
