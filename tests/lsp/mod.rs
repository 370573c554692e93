//! `crumb lsp` end to end, driven by a real LSP client: pytest-lsp's `LanguageClient` (pygls,
//! from the Python package index) runs `tests/lsp/client.py`, which checks every invalid
//! fixture against `crumb validate --format json`, an unsaved change and its fix, a template
//! edit, hover, completion, definition, rename, code actions, symbols, the graph lens and bad
//! input. The package is installed once into a cached venv by `scripts/lsp-venv.sh`. Then one
//! smoke run under headless Neovim (Debian's `neovim`, `scripts/ensure-neovim.sh`).

use std::path::Path;
use std::time::Duration;

use crate::support::{Crumb, repo_root};

/// Steps `client.py` reports when every expectation held.
const STEPS: [&str; 18] = [
    "ok initialize",
    "ok diagnostics equal crumb validate for",
    "ok an unsaved change is diagnosed as crumb validate would",
    "ok hover on a code",
    "ok a code action applied fixes it",
    "ok hover on a key, a role and a kind",
    "ok completion of a role in spawn: and a kind in on:",
    "ok go to definition of a template",
    "ok a template edit re-diagnoses its pipeline",
    "ok completion of a template variable, and its hover",
    "ok rename of a role across two files, and its references",
    "ok symbols and the graph lens",
    "ok a 10 MB buffer",
    "ok invalid UTF-16 offsets",
    "ok a YAML bomb",
    "ok a template include cycle",
    "ok a request for a deleted file",
    "ok shutdown",
];

/// A project holding the shipped casual pipeline and the shipped templates.
fn casual_project(project: &Path) {
    std::fs::create_dir_all(project.join("pipelines")).expect("mkdir");
    std::fs::copy(
        repo_root().join("pipelines/casual.yaml"),
        project.join("pipelines/casual.yaml"),
    )
    .expect("copy pipeline");
    crate::support::copy_dir(&repo_root().join("templates"), &project.join("templates"));
}

#[test]
fn pytest_lsp_drives_crumb_lsp_over_stdio() {
    let python = Crumb::shell("scripts/lsp-venv.sh")
        .timeout(Duration::from_secs(900))
        .run()
        .expect_code(0)
        .stdout
        .trim()
        .to_owned();
    let root = tempfile::tempdir().expect("tempdir");
    let project = root.path().join("project");
    casual_project(&project);
    Crumb::shell(r#""$PYTHON" tests/lsp/client.py "$CRUMB" "$PROJECT" "$REPO""#)
        .env("PYTHON", &python)
        .env("PROJECT", &project)
        .env("REPO", repo_root())
        .timeout(Duration::from_secs(300))
        .run()
        .expect_steps(&STEPS);
}

/// Headless Neovim opens a broken pipeline of a project `crumb init` made, whose `.nvim.lua`
/// starts `crumb lsp`, and reads the diagnostics back.
#[test]
fn neovim_reads_the_diagnostics_of_a_broken_pipeline() {
    Crumb::shell("scripts/ensure-neovim.sh")
        .timeout(Duration::from_secs(900))
        .run()
        .expect_code(0);
    let nvim = Crumb::shell("command -v nvim").run();
    assert_eq!(
        nvim.code, 0,
        "nvim is missing: `make deps` installs Debian's neovim"
    );
    let root = tempfile::tempdir().expect("tempdir");
    crate::support::crumb()
        .current_dir(root.path())
        .args(["init", "project"])
        .run()
        .expect_code(0);
    let project = root.path().join("project");
    let broken = project.join("pipelines/broken.yaml");
    let text = std::fs::read_to_string(project.join("pipelines/casual.yaml"))
        .expect("casual")
        .replace("spawn: builder }", "spawn: bilder }");
    std::fs::write(&broken, text).expect("broken pipeline");
    let out = root.path().join("diagnostics.txt");
    let run = Crumb::shell(
        r#"PATH="$(dirname "$CRUMB"):$PATH" nvim --headless --clean "$FILE" -c "luafile $PROJECT/.nvim.lua" -c "luafile tests/lsp/nvim_smoke.lua""#,
    )
    .env("FILE", &broken)
    .env("PROJECT", &project)
    .env("OUT", &out)
    .env("XDG_STATE_HOME", root.path().join("state"))
    .timeout(Duration::from_secs(120))
    .run();
    let read = std::fs::read_to_string(&out).unwrap_or_default();
    assert_eq!(
        run.code, 0,
        "--- stdout\n{}\n--- stderr\n{}\n--- diagnostics\n{read}",
        run.stdout, run.stderr
    );
    assert!(read.contains("crumb::unknown-role"), "{read}");
    assert!(read.contains("bilder"), "{read}");
}
