//! Hostile files in a pipeline's place: a FIFO, a device, a template that is a FIFO, a preset
//! that is a FIFO. Each is refused before it is read, so nothing blocks (the builder's timeout
//! would fail the test) and nothing is read without bound.

use std::path::Path;
use std::time::Duration;

use super::Scratch;
use crate::support::crumb;

const QUICK: Duration = Duration::from_secs(20);

fn mkfifo(path: &Path) {
    // A test helper, not crumb: the builder spawns crumb; `mkfifo` makes the fixture.
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn validate_refuses_dev_zero_without_reading_it() {
    let run = crumb()
        .args(["validate", "/dev/zero"])
        .timeout(QUICK)
        .run()
        .expect_code(3);
    assert!(
        run.stdout.contains("crumb::file-unreadable") && run.stdout.contains("not a regular file"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_fifo_as_the_pipeline_is_refused_by_validate_and_run() {
    let scratch = Scratch::new();
    let fifo = scratch.dir.path().join("pipelines/fifo.yaml");
    mkfifo(&fifo);
    let run = crumb()
        .arg("validate")
        .arg(&fifo)
        .timeout(QUICK)
        .run()
        .expect_code(3);
    assert!(
        run.stdout.contains("not a regular file (a FIFO)"),
        "{}",
        run.stdout
    );
    let run = scratch
        .command(&["run"])
        .arg(&fifo)
        .arg("pitch")
        .args(["--adapter", "mock"])
        .timeout(QUICK)
        .run()
        .expect_code(3);
    assert!(
        run.stderr.contains("not a regular file (a FIFO)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_fifo_as_a_template_is_a_located_error() {
    let scratch = Scratch::new();
    let template = scratch.dir.path().join("templates/builder.md.j2");
    std::fs::remove_file(&template).unwrap();
    mkfifo(&template);
    let run = crumb()
        .arg("validate")
        .arg(scratch.pipeline())
        .timeout(QUICK)
        .run()
        .expect_code(3);
    assert!(
        run.stdout.contains("crumb::file-unreadable")
            && run.stdout.contains("is not a regular file")
            && run.stdout.contains("casual-static.yaml:23:"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_fifo_as_a_preset_is_refused() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.dir.path().join("presets")).unwrap();
    mkfifo(&scratch.dir.path().join("presets/stuck.yaml"));
    let run = scratch
        .command(&["run"])
        .arg(scratch.pipeline())
        .arg("pitch")
        .args(["--preset", "stuck"])
        .timeout(QUICK)
        .run()
        .expect_code(2);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
}
