//! Hostile files in a pipeline's place: a FIFO, a device, a template that is a FIFO, a preset
//! that is a FIFO. Each is refused before it is read, so nothing blocks (the builder's timeout
//! would fail the test) and nothing is read without bound.

use std::path::Path;
use std::time::Duration;

use super::Scratch;
use crate::support::{Crumb, crumb};

const QUICK: Duration = Duration::from_secs(20);

fn mkfifo(path: &Path) {
    // A test helper, not crumb: the builder spawns crumb; `mkfifo` makes the fixture.
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `command` exits `code` at once (the builder's timeout proves nothing blocked) and says `needle`.
fn refused(command: Crumb, code: i32, needle: &str) {
    let run = command.timeout(QUICK).run().expect_code(code);
    let output = format!("{}{}", run.stdout, run.stderr);
    assert!(output.contains(needle), "{output}");
}

#[test]
fn validate_refuses_dev_zero_without_reading_it() {
    refused(
        crumb().args(["validate", "/dev/zero"]),
        3,
        "crumb::file-unreadable]: cannot read file: not a regular file (a device)",
    );
}

#[test]
fn a_fifo_as_the_pipeline_is_refused_by_validate_and_run() {
    let scratch = Scratch::new();
    let fifo = scratch.dir.path().join("pipelines/fifo.yaml");
    mkfifo(&fifo);
    let needle = "not a regular file (a FIFO)";
    refused(crumb().arg("validate").arg(&fifo), 3, needle);
    let run = scratch.command(&["run"]).arg(&fifo).arg("pitch");
    refused(run.args(["--adapter", "mock"]), 3, needle);
}

#[test]
fn a_fifo_as_a_template_is_an_error_at_the_role_s_line() {
    let scratch = Scratch::new();
    let template = scratch.dir.path().join("templates/builder.md.j2");
    std::fs::remove_file(&template).unwrap();
    mkfifo(&template);
    let validate = crumb().arg("validate").arg(scratch.pipeline());
    refused(validate, 3, "casual-static.yaml:23:");
}

#[test]
fn a_fifo_as_a_preset_is_refused() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.dir.path().join("presets")).unwrap();
    mkfifo(&scratch.dir.path().join("presets/stuck.yaml"));
    let run = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("pitch");
    refused(
        run.args(["--preset", "stuck"]),
        2,
        "not a regular file (a FIFO)",
    );
}
