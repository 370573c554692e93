//! Every declaration is honoured, over the real binary on small scripted agents (the `command`
//! adapter): two judges in sequence through an `on: judge.score` route, and `sees:` deciding what
//! a role's prompt holds.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::{crumb, only_session};

/// Each run takes a few seconds; this only bounds a hang.
const LIMIT: Duration = Duration::from_secs(120);
const SPEC_MARKER: &str = "SPEC-BODY-7f3a";

/// One agent for every role: `agent.py <role>` writes the event its role produces.
const AGENT: &str = r#"
import json, subprocess, sys
role = sys.argv[1]
sys.stdin.read()
dims = [5, 5, 4, 5, 4, 4]
scores = {f"D{i + 1}": {"score": s, "source": "verifier-llm"} for i, s in enumerate(dims)}
scores.update(aggregate=sum(dims), verdict="PASS")
event = {
    "planner": {"kind": "spec", "body": "SPEC-BODY-7f3a: one page"},
    "writer": {"kind": "build", "body": "wrote it"},
    "judge-a": {"kind": "judge.score", "body": "a: fine", "scores": scores},
    "judge-b": {"kind": "judge.score", "body": "b: fine", "scores": scores},
}[role]
subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
               stdout=subprocess.DEVNULL)
"#;

const TEMPLATE: &str = "goal: {{ goal }}\nspec: {% if spec %}{{ spec.body }}{% else %}none{% endif %}\nbuild: {% if build %}{{ build.body }}{% else %}none{% endif %}\n";

const PIPELINE: &str = r"
version: 1
name: two-judges
roles:
  planner:
    template: ../templates/role.md.j2
    produces: [spec]
    adapter: { command: [python3, ../agents/agent.py, planner] }
  writer:
    template: ../templates/role.md.j2
    produces: [build]
    adapter: { command: [python3, ../agents/agent.py, writer] }
  judge-a:
    template: ../templates/role.md.j2
    produces: [judge.score]
    sees: [goal, build]
    adapter: { command: [python3, ../agents/agent.py, judge-a] }
  judge-b:
    template: ../templates/role.md.j2
    produces: [judge.score]
    sees: [goal]
    adapter: { command: [python3, ../agents/agent.py, judge-b] }
scoring: { guards: [] }
routes:
  - { on: goal, spawn: planner }
  - { on: spec, spawn: writer }
  - { on: build, spawn: judge-a }
  - { on: judge.score, from: judge-a, spawn: judge-b }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, spawn: writer, with: feedback }
";

/// A project folder holding the pipeline, its template and its agent.
fn project() -> tempfile::TempDir {
    crate::support::project_with(&[
        ("pipelines/two-judges.yaml", PIPELINE),
        ("templates/role.md.j2", TEMPLATE),
        ("agents/agent.py", AGENT),
    ])
}

#[test]
fn two_judges_in_sequence_pass_and_sees_decides_what_each_prompt_holds() {
    let dir = project();
    let run = run_in(dir.path(), &["a one-page note"], None).expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["reason"], "verdict_pass", "{}", run.stderr);
    let session = only_session(&dir.path().join("home")).0;
    let transcript = std::fs::read_to_string(session.join("transcript.jsonl")).expect("read");
    let judges: Vec<String> = transcript
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .filter(|e| e["kind"] == "judge.score")
        .map(|e| e["from"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(judges, ["judge-a", "judge-b"]);

    let prompt = |name: &str| {
        std::fs::read_to_string(session.join("prompts").join(name)).expect("a prompt file")
    };
    // The writer sees everything public; judge-a sees the build but no spec; judge-b only the goal.
    let writer = prompt("writer-1.md");
    assert!(writer.contains(SPEC_MARKER), "{writer}");
    let judge_a = prompt("judge-a-1.md");
    assert!(
        judge_a.contains("spec: none") && judge_a.contains("build: wrote it"),
        "{judge_a}"
    );
    let judge_b = prompt("judge-b-1.md");
    assert!(!judge_b.contains(SPEC_MARKER), "{judge_b}");
    assert!(
        judge_b.contains("goal: a one-page note") && judge_b.contains("build: none"),
        "{judge_b}"
    );
}

// ---- long goals: `--pitch-file`, `-` (stdin), and the warning ----------------------------------

/// `crumb run pipelines/two-judges.yaml --json` plus `args` in the project at `dir`.
fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> crate::support::Run {
    let mut command = crumb()
        .current_dir(dir)
        .env("CRUMB_HOME", dir.join("home"))
        .env("CRUMB_STUDIO_PORT", "1")
        .args(["run", "pipelines/two-judges.yaml", "--json"])
        .args(["--wall-timeout", "60s", "--idle-timeout", "30s"])
        .args(args)
        .timeout(LIMIT);
    if let Some(input) = stdin {
        command = command.stdin(input);
    }
    command.run()
}

/// [`run_in`] a fresh project that also holds `long.txt`; the project is returned so the
/// session outlives the call.
fn run_goal(args: &[&str], stdin: Option<&str>) -> (tempfile::TempDir, crate::support::Run) {
    let dir = project();
    std::fs::write(dir.path().join("long.txt"), long_goal()).expect("write");
    let run = run_in(dir.path(), args, stdin);
    (dir, run)
}

/// A goal of 10 000 bytes whose last words are a marker, past the 8 KiB prompts quote.
fn long_goal() -> String {
    let mut goal = "write a note. ".repeat(714);
    goal.push_str("TAIL-MARKER\n");
    goal
}

fn events(dir: &Path) -> Vec<Value> {
    let session = only_session(&dir.join("home")).0;
    std::fs::read_to_string(session.join("transcript.jsonl"))
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

#[test]
fn a_goal_from_a_pitch_file_past_the_prompt_limit_is_warned_about_once_and_kept_whole() {
    let (dir, run) = run_goal(&["--pitch-file", "long.txt"], None);
    let run = run.expect_code(0);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].contains("8 KiB") && warnings[0].contains("--pitch-file"),
        "{}",
        warnings[0]
    );
    let events = events(dir.path());
    let goal = events.iter().find(|e| e["kind"] == "goal").expect("a goal");
    assert_eq!(goal["body"].as_str(), Some(long_goal().trim_end()));
    let hook = events
        .iter()
        .find(|e| e["kind"] == "hook" && e["data"]["hook"] == "goal_truncated")
        .expect("a goal_truncated hook");
    assert_eq!(hook["data"]["limit"], 8192);
    let session = only_session(&dir.path().join("home")).0;
    let prompt = std::fs::read_to_string(session.join("prompts/planner-1.md")).expect("prompt");
    assert!(!prompt.contains("TAIL-MARKER"), "the prompt quotes 8 KiB");
}

#[test]
fn a_dash_reads_the_goal_from_stdin_and_a_short_goal_warns_nothing() {
    let (dir, run) = run_goal(&["-"], Some("a note from stdin\n"));
    let run = run.expect_code(0);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let events = events(dir.path());
    let goal = events.iter().find(|e| e["kind"] == "goal").expect("a goal");
    assert_eq!(goal["body"], "a note from stdin");
    assert!(!events.iter().any(|e| e["kind"] == "hook"));
}

#[test]
fn a_pitch_and_a_pitch_file_together_or_an_oversized_file_are_usage_errors() {
    let (_dir, run) = run_goal(&["a pitch", "--pitch-file", "long.txt"], None);
    run.expect_code(2);
    let (_dir, run) = run_goal(&[], None);
    run.expect_code(2);
    let dir = project();
    let huge = dir.path().join("huge.txt");
    std::fs::write(&huge, vec![b'a'; 1024 * 1024 + 1]).expect("write");
    let run = run_in(dir.path(), &["--pitch-file", "huge.txt"], None).expect_code(2);
    assert!(
        run.stderr.contains("larger than 1024 KiB"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("home/projects").exists(), "no session");
}

#[test]
fn the_graph_draws_judge_a_to_judge_b_and_only_judge_b_to_the_verdicts() {
    let run = crumb()
        .args(["graph", "tests/pipelines/valid/two-judges.yaml"])
        .timeout(LIMIT)
        .run()
        .expect_code(0);
    let edges: Vec<&str> = run.stdout.lines().filter(|l| l.contains("-->")).collect();
    assert!(
        edges.contains(
            &r##"    role_judge_a -->|"#3 judge.score from judge-a · feedback"| role_judge_b"##
        ),
        "{}",
        run.stdout
    );
    let verdicts: Vec<&&str> = edges.iter().filter(|e| e.contains("verdict")).collect();
    assert!(
        !verdicts.is_empty() && verdicts.iter().all(|e| e.starts_with("    role_judge_b ")),
        "{}",
        run.stdout
    );
}
