//! `crumb mcp` end to end, driven by the official MCP Python SDK (`mcp` from the Python package index) as the host:
//! `tests/mcp/client.py` lists the tools and their schemas, runs mock sessions, follows one
//! through its resource's change notifications while `say /approve` ends it, and checks refusals
//! and located diagnostics. The SDK is installed once into a cached venv by
//! `scripts/mcp-venv.sh`.

use std::time::Duration;

use crate::support::{Crumb, crumb};

/// Steps `client.py` reports when every expectation held.
const STEPS: [&str; 8] = [
    "ok tools and their schemas",
    "ok run a casual mock session",
    "ok a refused line is a tool error",
    "ok change notifications until the session ended",
    "ok say /approve to a PARTIAL session and see it end",
    "ok status",
    "ok validate returns located diagnostics",
    "ok paths outside the project and home are refused",
];

#[test]
fn the_python_sdk_drives_crumb_mcp_over_stdio() {
    let python = Crumb::shell("scripts/mcp-venv.sh")
        .timeout(Duration::from_secs(900))
        .run()
        .expect_code(0)
        .stdout
        .trim()
        .to_owned();
    let root = tempfile::tempdir().expect("tempdir");
    let project = root.path().join("project");
    crate::support::casual_static_project(&project);
    std::fs::write(
        project.join("pipelines/broken.yaml"),
        "name: broken\nroles:\n  - id: a\n",
    )
    .expect("broken pipeline");
    std::fs::write(root.path().join("outside.yaml"), "name: outside\n").expect("outside file");
    Crumb::shell(r#""$PYTHON" tests/mcp/client.py "$CRUMB" "$PROJECT" "$HOME_DIR""#)
        .env("PYTHON", &python)
        .env("PROJECT", &project)
        .env("HOME_DIR", root.path().join("home"))
        .timeout(Duration::from_secs(300))
        .run()
        .expect_steps(&STEPS);
}

/// Each host's snippet names this binary and the project, in the host's own format.
#[test]
fn print_config_prints_each_hosts_snippet() {
    let root = tempfile::tempdir().expect("tempdir");
    let project = root.path().canonicalize().expect("canonical");
    let shown = project.display().to_string();
    let snippet = |host: &str| {
        crumb()
            .args(["mcp", "--print-config", host])
            .current_dir(&project)
            .run()
            .expect_code(0)
            .stdout
    };
    let claude = snippet("claude");
    assert!(claude.contains("claude mcp add crumb -- "), "{claude}");
    let json_start = claude.find('{').expect("a .mcp.json");
    let mcp_json: serde_json::Value =
        serde_json::from_str(&claude[json_start..]).expect("valid JSON");
    assert_eq!(
        mcp_json["mcpServers"]["crumb"]["args"],
        serde_json::json!(["mcp", "--project", shown])
    );
    let codex = snippet("codex");
    assert!(codex.contains("[mcp_servers.crumb]"), "{codex}");
    let args = format!("args = [\"mcp\", \"--project\", \"{shown}\"]");
    assert!(codex.contains(&args), "{codex}");
    let gemini = snippet("gemini");
    assert!(gemini.contains("settings.json"), "{gemini}");
    assert!(gemini.contains("\"mcpServers\""), "{gemini}");
}
