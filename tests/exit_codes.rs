//! Exit codes are an API: the CLI reference's tables (`docs/cli.md`) must list every code of `crumb::exit_codes` and every
//! subcommand of the CLI, and the commands that compile a pipeline must agree on what an invalid
//! one exits with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use crumb::exit_codes::{ALL, INVALID_PIPELINE, USAGE_ERROR};

use crate::support::{crumb_bin, repo_root};

/// The CLI reference, `docs/cli.md`.
fn cli_section() -> String {
    std::fs::read_to_string(repo_root().join("docs/cli.md")).expect("docs/cli.md")
}

/// The rows (cells, trimmed) of the table whose header row starts with `header`.
fn table(section: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = section.lines().skip_while(|l| !l.starts_with(header));
    assert!(
        lines.next().is_some(),
        "docs/cli.md has no table headed `{header}`"
    );
    lines
        .skip(1) // the |---| line
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            // `\|` is a pipe inside a cell.
            let row = row.replace("\\|", "\u{0}");
            row.trim_matches('|')
                .split('|')
                .map(|cell| cell.replace('\u{0}', "|").trim().to_owned())
                .collect()
        })
        .collect()
}

/// Every subcommand of the real CLI definition, hidden ones included.
fn subcommands() -> BTreeSet<String> {
    crumb::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect()
}

#[test]
fn cli_reference_lists_every_exit_code_by_number_and_name() {
    let rows = table(&cli_section(), "| code | name | when |");
    let documented: BTreeMap<String, u8> = rows
        .iter()
        .map(|row| {
            let code = row[0]
                .parse()
                .unwrap_or_else(|_| panic!("not a code: {row:?}"));
            (row[1].trim_matches('`').to_owned(), code)
        })
        .collect();
    assert_eq!(documented.len(), rows.len(), "a name is listed twice");
    let module: BTreeMap<String, u8> = ALL.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    for (name, value) in &module {
        assert_eq!(
            documented.get(name),
            Some(value),
            "src/exit_codes.rs has {name} = {value}; docs/cli.md's exit-code table must list it with that number"
        );
    }
    for (name, value) in &documented {
        assert!(
            module.contains_key(name),
            "docs/cli.md lists {value} `{name}`, which src/exit_codes.rs does not define"
        );
    }
    for row in &rows {
        assert!(
            !row[2].is_empty(),
            "docs/cli.md does not say when {} is used",
            row[1]
        );
    }
}

#[test]
fn cli_reference_lists_every_subcommand_with_documented_codes() {
    let rows = table(&cli_section(), "| command | what it does | exits with |");
    let codes: BTreeSet<u8> = ALL.iter().map(|(_, v)| *v).collect();
    let mut listed = BTreeSet::new();
    for row in &rows {
        let name = row[0]
            .trim_matches('`')
            .strip_prefix("crumb ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("the first cell names no `crumb <command>`: {row:?}"))
            .to_owned();
        let exits: BTreeSet<u8> = row[2]
            .split_whitespace()
            .map(|c| {
                c.parse()
                    .unwrap_or_else(|_| panic!("`crumb {name}`: `{c}` is not a code"))
            })
            .collect();
        for code in &exits {
            assert!(
                codes.contains(code),
                "`crumb {name}` is said to exit {code}, which src/exit_codes.rs does not define"
            );
        }
        assert!(
            exits.contains(&USAGE_ERROR),
            "`crumb {name}` exits {USAGE_ERROR} when its arguments are rejected; list it"
        );
        assert!(
            listed.insert(name.clone()),
            "`crumb {name}` is listed twice"
        );
    }
    let real = subcommands();
    let undocumented: Vec<_> = real.difference(&listed).collect();
    assert!(
        undocumented.is_empty(),
        "subcommands missing from docs/cli.md's command table: {undocumented:?}"
    );
    let stale: Vec<_> = listed.difference(&real).collect();
    assert!(
        stale.is_empty(),
        "docs/cli.md's command table lists commands the CLI does not have: {stale:?}"
    );
}

/// Run the real binary with a deadline; returns the exit code and stderr.
fn run_within(args: &[&str], home: &Path, limit: Duration) -> (i32, String) {
    let err_path = home.join(format!("stderr-{}", args.join("-").replace('/', "_")));
    let err_file = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = Command::new(crumb_bin())
        .args(args)
        .current_dir(repo_root())
        .env("CRUMB_HOME", home)
        .env("CRUMB_AMBIENT_ADAPTER", "mock")
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .expect("spawn crumb");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for crumb") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("crumb {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    (status.code().unwrap_or(-1), stderr)
}

/// `validate`, `graph`, `qa` and `run` given the same pipeline path.
fn four_commands(pipeline: &str) -> [Vec<&str>; 4] {
    [
        vec!["validate", pipeline],
        vec!["graph", pipeline],
        vec!["qa", pipeline, "."],
        vec!["run", pipeline, "a pitch"],
    ]
}

#[test]
fn validate_graph_qa_and_run_agree_on_an_invalid_pipeline() {
    let home = tempfile::tempdir().expect("tempdir");
    let pipeline = "tests/pipelines/invalid/unknown-role-in-route.yaml";
    for args in four_commands(pipeline) {
        let (code, stderr) = run_within(&args, home.path(), Duration::from_secs(30));
        assert_eq!(
            code,
            i32::from(INVALID_PIPELINE),
            "crumb {args:?} must exit INVALID_PIPELINE ({INVALID_PIPELINE}); stderr:\n{stderr}"
        );
    }
    assert!(
        !home.path().join("projects").exists(),
        "an invalid pipeline starts no session"
    );
}

#[test]
fn validate_graph_qa_and_run_agree_on_a_missing_pipeline() {
    let home = tempfile::tempdir().expect("tempdir");
    for args in four_commands("pipelines/does-not-exist.yaml") {
        let (code, stderr) = run_within(&args, home.path(), Duration::from_secs(30));
        assert_eq!(
            code,
            i32::from(USAGE_ERROR),
            "crumb {args:?} must exit USAGE_ERROR ({USAGE_ERROR}); stderr:\n{stderr}"
        );
        assert!(stderr.contains("does-not-exist.yaml"), "{args:?}: {stderr}");
    }
}
