//! The `command` adapter end to end: `pipelines/doc-review.yaml` on its scripted example agents
//! (`examples/agents/`), offline, by default, with `--adapter command` and with a `--bind` that
//! swaps in another program; and the refusals when a `command` role has no argv.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Run, crumb, repo_root};

const TOPIC: &str = "why sourdough needs time";
/// Every `crumb run` here finishes in about a second; this only bounds a hang.
const LIMIT: Duration = Duration::from_secs(120);

/// A crumb home of its own, and the folder crumb is started in.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// `crumb run pipelines/doc-review.yaml TOPIC --json` plus `extra`, started in the scratch
    /// folder.
    fn run(&self, extra: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = crumb()
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.dir.path().join("home"))
            .env("CRUMB_STUDIO_PORT", "1")
            .arg("run")
            .arg(repo_root().join("pipelines/doc-review.yaml"))
            .arg(TOPIC)
            .args(["--json", "--wall-timeout", "60s", "--idle-timeout", "30s"])
            .args(extra);
        for (key, value) in env {
            command = command.env(key, value);
        }
        command.timeout(LIMIT).run()
    }

    /// A writer at `relative` (inside the scratch folder) that prints its arguments, then runs
    /// the shipped example writer.
    fn wrapper(&self, relative: &str) -> PathBuf {
        let wrapper = self.dir.path().join(relative);
        let writer = repo_root().join("examples/agents/writer.py");
        std::fs::create_dir_all(wrapper.parent().expect("a folder")).expect("mkdir");
        std::fs::write(
            &wrapper,
            format!(
                "import runpy, sys\nprint('wrapper got', sys.argv[1:])\nrunpy.run_path({:?}, run_name='__main__')\n",
                writer.display().to_string()
            ),
        )
        .expect("write wrapper");
        wrapper.canonicalize().expect("canonical")
    }

    fn sessions(&self) -> Vec<PathBuf> {
        let Ok(projects) = std::fs::read_dir(self.dir.path().join("home/projects")) else {
            return Vec::new();
        };
        projects
            .flat_map(|project| {
                std::fs::read_dir(project.expect("entry").path().join("sessions"))
                    .into_iter()
                    .flatten()
                    .map(|session| session.expect("entry").path())
            })
            .collect()
    }

    fn events(&self) -> (PathBuf, Vec<Value>) {
        let sessions = self.sessions();
        assert_eq!(sessions.len(), 1, "one session: {sessions:?}");
        let text = std::fs::read_to_string(sessions[0].join("transcript.jsonl")).expect("read");
        let events = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        (sessions[0].clone(), events)
    }
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// The session passed, each role ran on `command` as decided by its layer, and every turn's usage
/// (reasoning tokens included) landed in its `agent.stop`.
fn assert_passed_on_command(
    scratch: &Scratch,
    run: &Run,
    layers: &[(&str, &str)],
) -> (PathBuf, Vec<Value>) {
    let summary: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|_| panic!("a JSON summary\n{}\n{}", run.stdout, run.stderr));
    assert_eq!(summary["reason"], "verdict_pass", "{}", run.stderr);
    let (session, events) = scratch.events();
    let bindings = &events[0]["data"]["bindings"];
    for (role, layer) in layers {
        assert_eq!(bindings[role]["adapter"], "command");
        assert_eq!(bindings[role]["decided_by"], *layer, "{role}");
    }
    for stop in of_kind(&events, "agent.stop") {
        assert_eq!(stop["data"]["outcome"], "ok", "{stop}");
        assert!(
            stop["metadata"]["thinking_tokens"].as_u64().is_some(),
            "{stop}"
        );
        assert_eq!(stop["metadata"]["provider"], "none");
    }
    let draft = std::fs::read_to_string(session.join("artifacts/doc/draft.md")).expect("draft");
    assert!(
        draft.starts_with("# On Why sourdough needs time"),
        "{draft}"
    );
    (session, events)
}

#[test]
fn doc_review_passes_offline_on_the_agents_its_pipeline_declares() {
    let scratch = Scratch::new();
    let run = scratch.run(&[], &[]).expect_code(0);
    let (session, events) = assert_passed_on_command(
        &scratch,
        &run,
        &[("writer", "pipeline"), ("reviewer", "pipeline")],
    );
    // The argv runs the frozen copies of the scripts, which travel with the session.
    let argv = &events[0]["data"]["bindings"]["writer"]["command"];
    assert_eq!(argv[0], "python3");
    let script = Path::new(argv[1].as_str().expect("a path"));
    assert!(script.starts_with(&session), "{script:?}");
    assert!(session.join("pipeline/examples/agents/writer.py").is_file());
    let reviewer_stop = of_kind(&events, "agent.stop")
        .into_iter()
        .find(|e| e["from"] == "reviewer")
        .expect("a reviewer stop");
    assert_eq!(reviewer_stop["metadata"]["thinking_tokens"], 48);
    assert_eq!(reviewer_stop["metadata"]["cache_read"], 64);
    assert_eq!(reviewer_stop["metadata"]["model"], "example-reviewer");
}

#[test]
fn adapter_command_uses_each_role_s_argv_and_a_scripted_failure_is_revised() {
    let scratch = Scratch::new();
    let run = scratch
        .run(
            &["--adapter", "command"],
            &[("CRUMB_EXAMPLE_FAIL_FIRST", "1")],
        )
        .expect_code(0);
    let (_, events) = assert_passed_on_command(
        &scratch,
        &run,
        &[("writer", "--adapter"), ("reviewer", "--adapter")],
    );
    let verdicts = of_kind(&events, "judge.score");
    assert_eq!(verdicts.len(), 2, "FAIL, then PASS after a revision");
    assert_eq!(verdicts[0]["scores"]["verdict"], "FAIL");
    assert_eq!(of_kind(&events, "build").len(), 2);
}

#[test]
fn bind_role_to_a_command_line_overrides_the_pipeline_without_a_shell() {
    let scratch = Scratch::new();
    // `$HOME` stays literal: no shell ever sees the argv.
    scratch.wrapper("my writer.py");
    let run = scratch
        .run(
            &["--bind", "writer=command:python3 './my writer.py' '$HOME'"],
            &[],
        )
        .expect_code(0);
    let (session, events) = assert_passed_on_command(
        &scratch,
        &run,
        &[("writer", "--bind"), ("reviewer", "pipeline")],
    );
    let argv = &events[0]["data"]["bindings"]["writer"]["command"];
    let expected = scratch
        .dir
        .path()
        .canonicalize()
        .expect("canonical")
        .join("my writer.py");
    assert_eq!(argv[1].as_str().map(PathBuf::from), Some(expected));
    let log = std::fs::read_to_string(session.join("logs/writer-1.log")).expect("writer log");
    assert!(log.contains("wrapper got ['$HOME']"), "{log}");
}

#[test]
fn a_command_role_without_an_argv_is_refused_before_anything_runs() {
    // `adapter: command` with no argv is a validate error at the role's line…
    let fixture = "tests/pipelines/invalid/command-without-argv.yaml";
    let validate = crumb()
        .args(["validate", fixture])
        .timeout(LIMIT)
        .run()
        .expect_code(i32::from(crumb::exit_codes::INVALID_PIPELINE));
    assert!(
        validate.stdout.contains(&format!("{fixture}:7:")),
        "{}",
        validate.stdout
    );
    // …and `--adapter command` over roles that declare none is a usage error naming the role.
    let scratch = Scratch::new();
    let run = crumb()
        .env("CRUMB_HOME", scratch.dir.path().join("home"))
        .arg("run")
        .arg("pipelines/casual.yaml")
        .arg("a pitch")
        .args(["--adapter", "command"])
        .timeout(LIMIT)
        .run()
        .expect_code(2);
    assert!(
        run.stderr
            .contains("role `planner-lead` runs on the command adapter (--adapter)")
            && run
                .stderr
                .contains("--bind planner-lead=command:'program args'"),
        "{}",
        run.stderr
    );
    assert!(scratch.sessions().is_empty(), "no session was created");
}

#[test]
fn status_shows_each_role_s_usage_with_cache_reasoning_cost_and_model() {
    let scratch = Scratch::new();
    scratch.run(&[], &[]).expect_code(0);
    let (session, _) = scratch.events();
    let status = crumb()
        .arg("status")
        .arg(&session)
        .timeout(LIMIT)
        .run()
        .expect_code(0);
    let usage: Vec<&str> = status
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("usage"))
        .take_while(|line| !line.is_empty())
        .collect();
    let usage = usage.join("\n") + "\n";
    insta::assert_snapshot!("status_usage_doc_review", usage);
}

#[test]
fn the_project_config_binds_a_command_with_paths_relative_to_its_folder() {
    let scratch = Scratch::new();
    let wrapper = scratch.wrapper("agents/w.py");
    std::fs::create_dir_all(scratch.dir.path().join(".crumb")).expect("mkdir");
    std::fs::write(
        scratch.dir.path().join(".crumb/config.yaml"),
        "roles:\n  writer: { adapter: command, command: [python3, ../agents/w.py, from-config] }\n",
    )
    .expect("write config");
    let run = scratch.run(&[], &[]).expect_code(0);
    let (session, events) = assert_passed_on_command(
        &scratch,
        &run,
        &[
            ("writer", ".crumb/config.yaml (role)"),
            ("reviewer", "pipeline"),
        ],
    );
    let argv = &events[0]["data"]["bindings"]["writer"]["command"];
    assert_eq!(argv[1].as_str().map(PathBuf::from), Some(wrapper));
    let log = std::fs::read_to_string(session.join("logs/writer-1.log")).expect("writer log");
    assert!(log.contains("wrapper got ['from-config']"), "{log}");
}
