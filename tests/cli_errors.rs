//! The CLI's one error path: what a command's error looks like (message, hints, exit code), and
//! that only `crumb::cli::main` prints an error and ends the process.

use std::path::{Path, PathBuf};

use crate::support::{Run, crumb, repo_root};

/// Exit code, then stderr with the session ids and temporary paths replaced.
fn shown(run: &Run, tmp: &Path) -> String {
    let stderr = run.stderr.replace(&tmp.display().to_string(), "[tmp]");
    format!("exit {}\n{stderr}", run.code)
}

#[test]
fn an_unknown_session_says_where_the_ids_are() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    for (name, args) in [
        ("say_unknown_session", vec!["say", "01ZZZZ", "/approve"]),
        ("resume_unknown_session", vec!["resume", "01ZZZZ"]),
        ("status_unknown_session", vec!["status", "01ZZZZ"]),
    ] {
        let run = crumb()
            .args(&args)
            .env("CRUMB_HOME", &home)
            .current_dir(tmp.path())
            .run()
            .expect_code(2);
        insta::assert_snapshot!(name, shown(&run, tmp.path()));
    }
}

#[test]
fn run_refuses_a_missing_pipeline_and_bad_inputs_before_any_session() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let run = crumb()
        .args(["run", "pipelines/no-such.yaml", "a pitch"])
        .env("CRUMB_HOME", &home)
        .run()
        .expect_code(2);
    insta::assert_snapshot!("run_missing_pipeline", shown(&run, tmp.path()));
    let run = crumb()
        .args(["run", "pipelines/casual.yaml", "a pitch", "--set", "nope=1"])
        .env("CRUMB_HOME", &home)
        .run()
        .expect_code(2);
    insta::assert_snapshot!("run_bad_set", shown(&run, tmp.path()));
    assert!(!home.exists(), "a refused run created {}", home.display());
}

#[test]
fn event_outside_an_agent_turn_says_it_needs_a_capability() {
    let tmp = tempfile::tempdir().unwrap();
    let run = crumb()
        .arg("event")
        .stdin(r#"{"kind":"note","body":"hi"}"#)
        .run()
        .expect_code(2);
    insta::assert_snapshot!("event_without_capability", shown(&run, tmp.path()));
}

/// Files that may end the process: the binary's `main`, the CLI's `main` (which alone prints a
/// command's error), the codes' own conversion, and the mock agent, which is a process of its
/// own (the dispatcher's child) rather than a command.
const MAY_EXIT: &[&str] = &[
    "src/main.rs",
    "src/cli/mod.rs",
    "src/exit_codes.rs",
    "src/cli/mock_agent.rs",
    // The turn shim ends as its agent ended (its code or its signal), which is no command's outcome.
    "src/cli/turn_shim.rs",
    "src/adapters/mock/agent.rs",
];

/// How many lines after an `eprintln!` an exit still counts as "print, then exit".
const WINDOW: usize = 6;

/// The places in `text` that end the process on their own: `std::process::exit` anywhere; outside
/// [`MAY_EXIT`], an exit status made, or an `eprintln!` followed within [`WINDOW`] lines by an
/// exit.
fn own_exits(text: &str, may_exit: bool) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        if code.contains("process::exit") {
            found.push(format!("{}: {}", i + 1, line.trim()));
        }
        if may_exit {
            continue;
        }
        if code.contains("exit_codes::exit") || has_word(code, "ExitCode") {
            found.push(format!("{}: {}", i + 1, line.trim()));
        }
        if code.contains("eprintln!") {
            let after = &lines[i..lines.len().min(i + WINDOW)];
            if after.iter().any(|l| l.contains("exit(")) {
                found.push(format!("{}: {} … exit", i + 1, line.trim()));
            }
        }
    }
    found
}

/// Whether `word` stands in `code` as a whole identifier (`ExitCode`, not `onExitCodes`).
fn has_word(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        !code[..at].ends_with(ident) && !code[at + word.len()..].starts_with(ident)
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_main_prints_an_error_and_exits() {
    let root = repo_root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 50, "src/ has only {} files", files.len());
    let mut offenders = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        for place in own_exits(&text, MAY_EXIT.contains(&relative.as_str())) {
            offenders.push(format!("{relative}:{place}"));
        }
    }
    assert!(
        offenders.is_empty(),
        "return a crumb::cli::error::CommandError instead; only crumb::cli::main prints and exits:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_scan_finds_a_print_then_exit() {
    let text =
        "fn run() -> ExitCode {\n    eprintln!(\"crumb x: no\");\n    exit(USAGE_ERROR)\n}\n";
    assert!(own_exits(text, true).is_empty());
    assert_eq!(own_exits(text, false).len(), 2);
    assert!(own_exits("std::process::exit(1);", true).len() == 1);
    assert!(own_exits("eprintln!(\"note\");\nOk(())", false).is_empty());
    assert!(own_exits(r#"json!({ "onExitCodes": [2] })"#, false).is_empty());
}
