//! `crumb init`: a project that validates as written (also as CI runs it, `--format github
//! --deny-warnings`), editor settings mapping pipelines to the schema the modeline names, no
//! file overwritten, and the doc-review and code starting points running offline.

use std::path::Path;

use serde_json::Value;

use crate::support::crumb;

fn init(dir: &Path, from: &str) -> crate::support::Run {
    crumb()
        .current_dir(dir)
        .args(["init", "project", "--from", from])
        .run()
}

#[test]
fn casual_scaffold_validates_and_maps_pipelines_to_its_schema() {
    let scratch = tempfile::tempdir().unwrap();
    init(scratch.path(), "casual").expect_code(0);
    let project = scratch.path().join("project");
    let pipeline = std::fs::read_to_string(project.join("pipelines/casual.yaml")).unwrap();
    let modeline = pipeline.lines().next().unwrap();
    let schema = modeline
        .strip_prefix("# yaml-language-server: $schema=")
        .unwrap();
    assert!(
        project.join("pipelines").join(schema).is_file(),
        "the modeline's schema is there"
    );
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".vscode/settings.json")).unwrap(),
    )
    .unwrap();
    let globs = &settings["yaml.schemas"]["./schemas/pipeline.schema.json"];
    assert_eq!(
        globs,
        &serde_json::json!(["*.crumb.yaml", "pipelines/*.yaml"])
    );
    assert_eq!(settings["glspc.server.command"], "crumb");
    assert_eq!(
        settings["glspc.server.commandArguments"],
        serde_json::json!(["lsp"])
    );
    let helix = std::fs::read_to_string(project.join(".helix/languages.toml")).unwrap();
    assert!(
        helix.contains("[language-server.crumb]\ncommand = \"crumb\"\nargs = [\"lsp\"]"),
        "{helix}"
    );
    let neovim = std::fs::read_to_string(project.join(".nvim.lua")).unwrap();
    assert!(neovim.contains(r#"cmd = { "crumb", "lsp" }"#), "{neovim}");
    let workflow = std::fs::read_to_string(project.join(".github/workflows/crumb.yml")).unwrap();
    let step = workflow
        .lines()
        .find(|l| l.contains("crumb validate"))
        .unwrap();
    let command = step.trim().strip_prefix("- run: ").unwrap();
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    crumb()
        .current_dir(&project)
        .args(&args)
        .env("GITHUB_ACTIONS", "true")
        .run()
        .expect_code(0);
    // …and so does its `crumb check` step.
    let check = workflow
        .lines()
        .find(|l| l.contains("- run: crumb check"))
        .expect("a crumb check step");
    let args: Vec<&str> = check
        .trim()
        .strip_prefix("- run: ")
        .unwrap()
        .split_whitespace()
        .skip(1)
        .collect();
    crumb()
        .current_dir(&project)
        .args(&args)
        .run()
        .expect_code(0);
    // Running it again overwrites nothing.
    let again = init(scratch.path(), "casual").expect_code(2);
    assert!(
        again.stderr.contains("already holds pipelines/casual.yaml"),
        "{}",
        again.stderr
    );
}

#[test]
fn doc_review_scaffold_runs_offline_with_its_example_agents() {
    let scratch = tempfile::tempdir().unwrap();
    init(scratch.path(), "doc-review").expect_code(0);
    let project = scratch.path().join("project");
    crumb()
        .current_dir(&project)
        .args(["validate", "--deny-warnings", "pipelines/"])
        .run()
        .expect_code(0);
    crumb()
        .current_dir(&project)
        .env("CRUMB_HOME", scratch.path().join("home"))
        .env("CRUMB_STUDIO_PORT", "1")
        .args([
            "run",
            "pipelines/doc-review.yaml",
            "why sourdough needs time",
            "--json",
        ])
        .run()
        .expect_code(0);
}

#[test]
fn code_scaffold_runs_offline_with_its_example_agents() {
    let scratch = tempfile::tempdir().unwrap();
    init(scratch.path(), "code").expect_code(0);
    let project = scratch.path().join("project");
    crumb()
        .current_dir(&project)
        .args(["validate", "--deny-warnings", "pipelines/"])
        .run()
        .expect_code(0);
    let run = crumb()
        .current_dir(&project)
        .env("CRUMB_HOME", scratch.path().join("home"))
        .env("CRUMB_STUDIO_PORT", "1")
        .args([
            "run",
            "pipelines/code.yaml",
            "a slugify function for blog titles",
            "--json",
        ])
        .run()
        .expect_code(0);
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["reason"], "verdict_pass");
}

/// The README's `--preset claude|codex|gemini|cross|mock` works in a new project: `init` writes
/// the shipped presets and the schema their modelines name.
#[test]
fn scaffold_carries_the_shipped_presets_and_their_schema() {
    let scratch = tempfile::tempdir().unwrap();
    init(scratch.path(), "casual").expect_code(0);
    let project = scratch.path().join("project");
    assert!(project.join("schemas/preset.schema.json").is_file());
    for name in ["claude", "codex", "gemini", "cross", "mock"] {
        let preset = std::fs::read_to_string(project.join(format!("presets/{name}.yaml"))).unwrap();
        let schema = preset
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# yaml-language-server: $schema="))
            .unwrap();
        assert!(
            project.join("presets").join(schema).is_file(),
            "{name}: {schema}"
        );
        crumb()
            .current_dir(&project)
            .env("CRUMB_HOME", scratch.path().join("home"))
            .args([
                "run",
                "pipelines/casual.yaml",
                "a pitch",
                "--dry-run",
                "--script",
                "PASS",
            ])
            .args(["--preset", name, "--json"])
            .run()
            .expect_code(0);
    }
    let unknown = crumb()
        .current_dir(&project)
        .env("CRUMB_HOME", scratch.path().join("home"))
        .args([
            "run",
            "pipelines/casual.yaml",
            "a pitch",
            "--dry-run",
            "--script",
            "PASS",
        ])
        .args(["--preset", "nope"])
        .run();
    assert!(
        unknown.stderr.contains("unknown preset `nope`"),
        "{}",
        unknown.stderr
    );
}
