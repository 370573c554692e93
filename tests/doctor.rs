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

/// A model server stand-in on loopback: answers every request with `404` and closes.
fn answering_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                request.push(byte[0]);
            }
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
    });
    port
}

/// `crumb doctor --preset`: bindings on a `base_url` are checked against that server and key
/// variable, not a vendor login (the fake CLIs all say "logged out" here); a binding without
/// one still needs its login.
#[test]
fn doctor_preset_checks_base_urls_and_keys_instead_of_vendor_logins() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let up = answering_server();
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let preset = |gemini_port: u16, builder: &str| {
        format!(
            "name: local\ndefault: {{ adapter: codex, model: m, base_url: 'http://127.0.0.1:{up}/v1', api_key_env: LOCAL_KEY }}\nroles:\n  verifier: {{ adapter: gemini-cli, model: m, base_url: 'http://127.0.0.1:{gemini_port}', api_key_env: OTHER_KEY }}\n{builder}"
        )
    };
    std::fs::create_dir(project.path().join("presets")).unwrap();
    let write =
        |text: String| std::fs::write(project.path().join("presets/local.yaml"), text).unwrap();
    let check = || {
        doctor(home.path())
            .current_dir(project.path())
            .env("FAKE_CLI_LOGGED_OUT", "1")
            .env("LOCAL_KEY", "k")
            .env_remove("OTHER_KEY")
            .args(["--preset", "local", "--json"])
    };

    write(preset(down, ""));
    let report: Value = serde_json::from_str(&check().run().expect_code(1).stdout).unwrap();
    let problems: Vec<&str> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["what"].as_str().unwrap())
        .collect();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].contains(&format!("127.0.0.1:{down} does not answer")),
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("`OTHER_KEY` is not set"),
        "{problems:#?}"
    );
    let default = &report["preset"]["bindings"][0];
    assert_eq!(default["reachable"], true, "{report:#}");
    assert_eq!(default["reach_detail"], "answered HTTP/1.1 404 Not Found");
    assert_eq!(default["key_set"], true);

    write(preset(
        up,
        "  builder: { adapter: claude-code, model: sonnet }\n",
    ));
    let run = check().env("OTHER_KEY", "k2").run().expect_code(1);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{report:#}");
    assert!(
        problems[0]["what"]
            .as_str()
            .unwrap()
            .contains("preset binding `builder` (claude-code): claude is not logged in"),
        "{report:#}"
    );

    write(preset(up, ""));
    let text = doctor(home.path())
        .current_dir(project.path())
        .env("FAKE_CLI_LOGGED_OUT", "1")
        .env("LOCAL_KEY", "k")
        .env("OTHER_KEY", "k2")
        .args(["--preset", "presets/local.yaml"])
        .run()
        .expect_code(0);
    assert!(
        text.stdout
            .contains("ok        a run with this preset can work here"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains(&format!("http://127.0.0.1:{up}/v1 reachable")),
        "{}",
        text.stdout
    );

    let unknown = doctor(home.path())
        .current_dir(project.path())
        .args(["--preset", "nope"])
        .run()
        .expect_code(2);
    assert!(
        unknown.stderr.contains("unknown preset `nope`"),
        "{}",
        unknown.stderr
    );
}
