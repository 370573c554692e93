//! `crumb doctor` and `crumb run`'s preflight against fake agent CLIs (their own status
//! commands), the real Chromium and a scratch crumb home.

use serde_json::Value;

use crate::support::{Crumb, crumb, repo_root};

/// `PATH` with the fake agent CLIs first.
fn fake_clis_path() -> String {
    format!(
        "{}:{}",
        repo_root().join("tests/fixtures/fake-clis").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn doctor(home: &std::path::Path) -> Crumb {
    crumb()
        .env("PATH", fake_clis_path())
        .env("CRUMB_HOME", home)
        .env_remove("GEMINI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("CODEX_API_KEY")
        .env("CODEX_HOME", home.join("no-codex-config"))
        .arg("doctor")
}

#[test]
fn doctor_reports_each_cli_chromium_home_and_limits_as_json() {
    let home = tempfile::tempdir().unwrap();
    let run = doctor(home.path()).arg("--json").run().expect_code(0);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["default_adapter"], "mock");
    let agents = report["agents"].as_array().unwrap();
    let by = |binary: &str| agents.iter().find(|a| a["binary"] == binary).unwrap();
    assert_eq!(by("claude")["version"], "9.9.9 (Claude Code)");
    assert_eq!(by("claude")["logged_in"], "yes");
    assert!(
        by("claude")["login_detail"]
            .as_str()
            .unwrap()
            .starts_with("`claude auth status`"),
        "asked through its own status command: {report:#}"
    );
    assert_eq!(by("codex")["logged_in"], "yes");
    assert_eq!(by("gemini")["logged_in"], "unknown");
    assert_eq!(report["chromium"]["starts"], true);
    assert_eq!(report["home"]["writable"], true);
    assert!(report["home"]["free_bytes"].as_u64() > Some(0));
    assert!(report["limits"]["arg_max"].as_u64() > Some(4096));
    assert!(report["limits"]["open_files_soft"].as_u64() > Some(0));
}

#[test]
fn a_default_run_on_a_logged_out_cli_or_without_chromium_is_not_ok_and_says_the_fix() {
    let home = tempfile::tempdir().unwrap();
    let run = doctor(home.path())
        .env("CRUMB_AMBIENT_ADAPTER", "claude-code")
        .env("FAKE_CLI_LOGGED_OUT", "1")
        .env("CRUMB_CHROMIUM", "/nonexistent/chromium")
        .run()
        .expect_code(1);
    let redacted = redact(&run.stdout, home.path());
    insta::assert_snapshot!("doctor_logged_out_no_chromium", redacted);
}

/// Paths, versions and machine numbers replaced, so the snapshot is the report's shape.
fn redact(text: &str, home: &std::path::Path) -> String {
    let fakes = repo_root().join("tests/fixtures/fake-clis");
    let text = text
        .replace(&fakes.display().to_string(), "[fake-clis]")
        .replace(&home.display().to_string(), "[home]");
    text.lines()
        .map(|line| {
            if line.starts_with("home ") || line.starts_with("limits ") {
                let words: Vec<String> = line
                    .split(' ')
                    .map(|w| {
                        if w.chars().any(|c| c.is_ascii_digit()) {
                            "N".to_owned()
                        } else {
                            w.to_owned()
                        }
                    })
                    .collect();
                words.join(" ")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn run_stops_before_the_first_spawn_when_a_bound_cli_is_logged_out() {
    let dir = tempfile::tempdir().unwrap();
    let run = crumb()
        .env("PATH", fake_clis_path())
        .env("CRUMB_HOME", dir.path())
        .env("FAKE_CLI_LOGGED_OUT", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .args(["run", "pipelines/casual.yaml", "a pitch"])
        .args(["--adapter", "mock", "--bind", "planner-lead=claude-code"])
        .run()
        .expect_code(i32::from(crumb::exit_codes::USAGE_ERROR));
    assert!(
        run.stderr
            .contains("planner-lead is bound to claude-code, which is not logged in"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("fix: run `claude auth login`"),
        "{}",
        run.stderr
    );
    assert!(
        !dir.path().join("projects").exists(),
        "no session was created"
    );
}
