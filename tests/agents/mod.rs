//! Contract tests against the real agent CLIs, installed from npm into one cache folder
//! (`$CRUMB_TEST_CACHE`, default `~/.cache/crumb-test/agents`) and pointed at a project-owned
//! fake model API on `127.0.0.1:0` ([`fake_api`]).
//!
//! - Without `node`/`npm` every test here prints why it is skipped; with
//!   `CRUMB_TEST_AGENTS_REQUIRED=1` (what `make test-agents` sets) it fails instead.
//! - `make test` runs a small slice (claude's pass case and its rejected-key case); the whole set
//!   runs with `CRUMB_TEST_AGENTS=all` (`make test-agents`).

mod cases;
mod fake_api;
mod setup;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::{Crumb, copy_dir, crumb, repo_root};

/// The three CLIs as installed in the cache.
pub struct Installed {
    /// `node_modules/.bin` of the cache folder.
    pub bin: PathBuf,
    pub versions: Vec<(String, String)>,
}

/// The CLIs, installed once per test binary; `Err` says why they cannot be.
fn installed() -> Result<&'static Installed, String> {
    static INSTALLED: OnceLock<Result<Installed, String>> = OnceLock::new();
    INSTALLED
        .get_or_init(setup::install)
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether a test that is not part of the slice `make test` runs should run.
fn full_set() -> bool {
    std::env::var("CRUMB_TEST_AGENTS").is_ok_and(|v| v == "all")
}

/// The installed CLIs, or `None` after printing why the test is skipped (a failure when
/// `CRUMB_TEST_AGENTS_REQUIRED=1`).
fn agents_or_skip(test: &str, in_slice: bool) -> Option<&'static Installed> {
    let required = std::env::var("CRUMB_TEST_AGENTS_REQUIRED").is_ok_and(|v| v == "1");
    if !in_slice && !full_set() {
        eprintln!("SKIPPED {test}: not in the `make test` slice; `make test-agents` runs it");
        return None;
    }
    match installed() {
        Ok(installed) => Some(installed),
        Err(why) if required => panic!("{test}: the real agent CLIs are required: {why}"),
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            None
        }
    }
}

/// The agent CLI under test and how to point it at a model API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
}

impl Cli {
    pub fn adapter(self) -> &'static str {
        match self {
            Cli::Claude => "claude-code",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini-cli",
        }
    }
}

/// A scratch project (the casual pipeline with static QA), a crumb home and a private `HOME`
/// holding the CLI's configuration, all in one temporary folder.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("pipelines")).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::copy(
            repo_root().join("tests/fixtures/run/casual-static.yaml"),
            root.join("pipelines/casual-static.yaml"),
        )
        .unwrap();
        copy_dir(&repo_root().join("templates"), &root.join("templates"));
        Project { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `crumb run` of the casual pipeline with every role on `cli`, pointed at `api_url` by a
    /// preset (`presets/local.yaml`, as `docs/agents.md`'s "Local models" shows).
    pub fn run(&self, installed: &Installed, cli: Cli, api_url: &str) -> Crumb {
        setup::write_preset(&self.dir.path().join("presets"), cli, api_url);
        let command = crumb()
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.dir.path().join("crumb-home"))
            .env("CRUMB_STUDIO_PORT", "1")
            .env("HOME", self.home())
            .env("PATH", path_with(&installed.bin))
            .arg("run")
            .arg(self.dir.path().join("pipelines/casual-static.yaml"))
            .arg("60-second match-3 with combo bonus")
            .args(["--preset", "local", "--json"])
            // A process timeout on the run, not a timing assertion: a hang fails the test.
            .timeout(Duration::from_secs(180));
        setup::isolate(command, cli, &self.home())
    }

    /// `crumb status --json` of the only session.
    pub fn status_json(&self) -> serde_json::Value {
        let session = self.session();
        let run = crumb()
            .current_dir(self.dir.path())
            .env("CRUMB_HOME", self.dir.path().join("crumb-home"))
            .arg("status")
            .arg(&session)
            .arg("--json")
            .run()
            .expect_code(0);
        serde_json::from_str(&run.stdout).unwrap()
    }

    fn session(&self) -> PathBuf {
        let projects = self.dir.path().join("crumb-home/projects");
        let project = std::fs::read_dir(projects)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        std::fs::read_dir(project.path().join("sessions"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    }

    /// The transcript of the only session.
    pub fn events(&self) -> Vec<serde_json::Value> {
        let projects = self.dir.path().join("crumb-home/projects");
        let project = std::fs::read_dir(projects)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let session = std::fs::read_dir(project.path().join("sessions"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        std::fs::read_to_string(session.path().join("transcript.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// `PATH` with the cached CLIs first.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}
