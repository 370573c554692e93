//! Integration tests: runtime — sessions on disk, `crumb ls`, `crumb say`, the inbox, bindings,
//! process spawning and the agent-CLI adapters against fake CLIs.

use std::path::PathBuf;

use crumb::home::{CrumbHome, Project};
use crumb::runtime::meta::SessionStatus;
use crumb::runtime::session::{self, CreatedSession};

use crate::support::{crumb, repo_root};

/// A scratch crumb home and project directory, both deleted at the end of the test.
struct Sandbox {
    tmp: tempfile::TempDir,
    home: CrumbHome,
    project_dir: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = CrumbHome::at(tmp.path().join("home"));
        let project_dir = tmp.path().join("project");
        std::fs::create_dir_all(&project_dir).unwrap();
        Sandbox {
            tmp,
            home,
            project_dir,
        }
    }

    fn project(&self) -> Project {
        Project::containing(&self.project_dir).unwrap()
    }

    /// A real session of the shipped casual pipeline, created through the library.
    fn session(&self, goal: &str) -> CreatedSession {
        session::create(
            &self.home,
            &self.project(),
            &repo_root().join("pipelines/casual.yaml"),
            goal,
        )
        .unwrap()
    }

    /// `crumb` run from the project directory with this sandbox's home.
    fn crumb(&self) -> crate::support::Crumb {
        crumb()
            .current_dir(&self.project_dir)
            .env("CRUMB_HOME", self.home.root())
    }
}

fn ls_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"[0-9A-HJKMNP-TV-Z]{26}", "[ULID]"),
        (r"\b\d+[smhd]\b", "[age]"),
        (r"\b[0-9a-f]{16}\b", "[project]"),
    ]
}

#[test]
fn new_session_has_the_documented_layout() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("60-second match-3");
    let dir = created.dir.path();
    for file in [
        "transcript.jsonl",
        "meta.json",
        "inbox.txt",
        "coordinator.lock",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    for sub in [
        "artifacts",
        "prompts",
        "logs",
        "qa",
        "pipeline/pipelines",
        "pipeline/templates",
    ] {
        assert!(dir.join(sub).is_dir(), "{sub} missing");
    }
    let frozen = created.dir.frozen_pipeline(&created.meta);
    assert_eq!(frozen, dir.join("pipeline/pipelines/casual.yaml"));
    assert_eq!(
        std::fs::read(&frozen).unwrap(),
        std::fs::read(repo_root().join("pipelines/casual.yaml")).unwrap()
    );
    assert!(
        dir.join("pipeline/templates/_event_protocol.md.j2")
            .is_file(),
        "included partials are frozen too"
    );
    assert_eq!(created.meta.status, SessionStatus::Running);
    assert_eq!(created.meta.pid, Some(std::process::id()));
    assert_eq!(created.meta.roles, ["planner-lead", "builder", "verifier"]);
    assert_eq!(created.meta.pipeline_hash, created.frozen.hash);
    assert_eq!(created.dir.read_meta().unwrap(), created.meta);
    assert!(
        created
            .dir
            .path()
            .starts_with(sandbox.home.sessions_dir(&sandbox.project())),
        "sessions live under $CRUMB_HOME/projects/<id>/sessions"
    );
}

#[test]
fn a_second_coordinator_cannot_lock_a_live_session() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let err = crumb::runtime::lock::CoordinatorLock::acquire(created.dir.path()).unwrap_err();
    assert!(err.to_string().contains("another coordinator"), "{err}");
}

#[test]
fn ls_lists_this_projects_sessions_newest_first() {
    let sandbox = Sandbox::new();
    let older = sandbox.session("60-second match-3 with combo bonus");
    let newer = sandbox.session("a very long pitch that goes on and on about a roguelike deckbuilder with pirates, ninjas and a time loop");
    let run = sandbox.crumb().arg("ls").run().expect_code(0);
    let first_id = run
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(first_id, newer.dir.id());
    assert!(run.stdout.contains(older.dir.id()));
    insta::with_settings!({ filters => ls_filters() }, {
        insta::assert_snapshot!("ls_table", run.stdout);
    });
}

#[test]
fn ls_reports_a_dead_coordinator() {
    let sandbox = Sandbox::new();
    let alive = sandbox.session("alive");
    let dead = sandbox.session("dead");
    let dead_id = dead.dir.id().to_owned();
    drop(dead.lock); // the coordinator died: meta still says running, the lock is free
    let run = sandbox.crumb().args(["ls", "--json"]).run().expect_code(0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
    let status_of = |id: &str| rows.iter().find(|row| row["id"] == id).unwrap()["status"].clone();
    assert_eq!(status_of(alive.dir.id()), "running");
    assert_eq!(status_of(&dead_id), "dead");
    assert_eq!(rows[0]["goal"], "dead");
    assert_eq!(rows[0]["pipeline"], "casual");
}

#[test]
fn ls_scopes_to_the_project_unless_asked_for_all() {
    let sandbox = Sandbox::new();
    sandbox.session("here");
    let elsewhere = sandbox.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run = sandbox
        .crumb()
        .current_dir(&elsewhere)
        .arg("ls")
        .run()
        .expect_code(0);
    assert_eq!(
        run.stdout,
        "no sessions for this project (try --all-projects)\n"
    );
    let run = sandbox
        .crumb()
        .current_dir(&elsewhere)
        .args(["ls", "--all-projects"])
        .run()
        .expect_code(0);
    assert!(run.stdout.contains("here"), "{}", run.stdout);
    assert!(run.stdout.starts_with("PROJECT"));
}

#[test]
fn ls_skips_unreadable_sessions_with_a_warning() {
    let sandbox = Sandbox::new();
    let good = sandbox.session("good");
    let broken = sandbox
        .home
        .sessions_dir(&sandbox.project())
        .join("01JBROKEN0000000000000000");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("meta.json"), "{ not json").unwrap();
    let run = sandbox.crumb().arg("ls").run().expect_code(0);
    assert!(run.stdout.contains(good.dir.id()));
    assert!(run.stderr.contains("skipped"), "{}", run.stderr);
}

#[test]
fn ls_handles_hundreds_of_sessions() {
    let sandbox = Sandbox::new();
    let first = sandbox.session("template");
    let sessions = sandbox.home.sessions_dir(&sandbox.project());
    let meta = std::fs::read_to_string(first.dir.meta_path()).unwrap();
    for n in 0..300 {
        let id = format!("01J{n:023}");
        let dir = sessions.join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), meta.replace(first.dir.id(), &id)).unwrap();
    }
    let run = sandbox.crumb().args(["ls", "--json"]).run().expect_code(0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(rows.len(), 301);
}

#[test]
fn say_appends_valid_lines_by_id_prefix_or_path() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    sandbox
        .crumb()
        .args(["say", &id, "/pause", "@builder"])
        .run()
        .expect_code(0);
    sandbox
        .crumb()
        .args(["say", &id.to_lowercase()[..20], "@builder make it faster"])
        .run()
        .expect_code(0);
    let transcript = created.dir.transcript();
    let run = sandbox
        .crumb()
        .args(["say", transcript.to_str().unwrap(), "/approve"])
        .run()
        .expect_code(0);
    assert_eq!(run.stdout, format!("sent to {id}\n"));
    assert_eq!(run.stderr, "", "a live coordinator holds the lock: no note");
    let inbox = std::fs::read_to_string(created.dir.inbox()).unwrap();
    assert_eq!(
        inbox,
        "/pause @builder\n@builder make it faster\n/approve\n"
    );
}

#[test]
fn say_rejects_bad_lines_with_exit_2_and_appends_nothing() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    let cases = [
        ("/goto researcher", "unknown role `researcher`"),
        ("@buildr hi", "did you mean `@builder`?"),
        ("/swap builder=gpt5", "unknown adapter `gpt5`"),
        ("/frobnicate", "unknown command `/frobnicate`"),
        ("/ask weather", "unknown /ask topic"),
        ("   ", "nothing to say"),
    ];
    for (line, expected) in cases {
        let run = sandbox
            .crumb()
            .args(["say", &id, line])
            .run()
            .expect_code(2);
        assert!(run.stderr.contains(expected), "{line}: {}", run.stderr);
    }
    let run = sandbox
        .crumb()
        .args(["say", &id, "/goto researcher"])
        .run()
        .expect_code(2);
    insta::with_settings!({ filters => ls_filters() }, {
        insta::assert_snapshot!("say_unknown_role", run.stderr);
    });
    assert_eq!(std::fs::read_to_string(created.dir.inbox()).unwrap(), "");
}

#[test]
fn say_resolves_sessions_strictly() {
    let sandbox = Sandbox::new();
    let first = sandbox.session("one");
    let _second = sandbox.session("two");
    let shared: String = first.dir.id().chars().take(3).collect();
    let run = sandbox
        .crumb()
        .args(["say", &shared, "/approve"])
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("matches 2 sessions"), "{}", run.stderr);
    let run = sandbox
        .crumb()
        .args(["say", "01ZZZZ", "/approve"])
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("no session matches"), "{}", run.stderr);
    let run = sandbox
        .crumb()
        .args(["say", "not a session!", "/approve"])
        .run()
        .expect_code(2);
    assert!(
        run.stderr.contains("neither a session id"),
        "{}",
        run.stderr
    );
}

#[test]
fn say_to_a_session_without_coordinator_notes_when_it_applies() {
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    drop(created.lock);
    let run = sandbox
        .crumb()
        .args(["say", &id, "/approve"])
        .run()
        .expect_code(0);
    assert!(
        run.stderr
            .contains(&format!("applies on `crumb resume {id}`")),
        "{}",
        run.stderr
    );
}

#[test]
fn said_lines_read_back_as_user_events_with_offsets() {
    use crumb::runtime::inbox::{parse_line, read_after, to_draft};
    let sandbox = Sandbox::new();
    let created = sandbox.session("g");
    let id = created.dir.id().to_owned();
    for line in ["/veto too dark", "/resume @verifier", "@builder add sound"] {
        sandbox
            .crumb()
            .args(["say", &id, line])
            .run()
            .expect_code(0);
    }
    let lines = read_after(&created.dir.inbox(), 0).unwrap();
    let drafts: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| {
            let command = parse_line(&line.text, &created.meta.roles)
                .unwrap()
                .unwrap();
            serde_json::to_value(to_draft(&command, Some(line.end))).unwrap()
        })
        .collect();
    insta::assert_json_snapshot!("said_lines_as_drafts", drafts);
    // Resuming from the last recorded offset yields nothing new.
    assert!(
        read_after(&created.dir.inbox(), lines[2].end)
            .unwrap()
            .is_empty()
    );
}

mod process;

mod fake_clis;
