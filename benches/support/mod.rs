//! What the batch and export benches share: a scratch project holding the static-QA pipeline.

use std::path::{Path, PathBuf};

/// A temporary project with `pipelines/casual-static.yaml` and the templates; the pipeline path.
pub fn scratch_project(root: &Path) -> (tempfile::TempDir, PathBuf) {
    let scratch = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(scratch.path().join("pipelines")).expect("pipelines dir");
    let pipeline = scratch.path().join("pipelines/casual-static.yaml");
    std::fs::copy(
        root.join("tests/fixtures/run/casual-static.yaml"),
        &pipeline,
    )
    .expect("copy the static pipeline");
    copy_dir(&root.join("templates"), &scratch.path().join("templates"));
    (scratch, pipeline)
}

/// The one session folder under the crumb home `home` (a bench's scratch home holds one).
#[allow(
    dead_code,
    reason = "not every bench that shares this module reads a session"
)]
pub fn only_session(home: &Path) -> PathBuf {
    let project = std::fs::read_dir(home.join("projects"))
        .expect("projects")
        .next()
        .expect("one")
        .expect("entry");
    std::fs::read_dir(project.path().join("sessions"))
        .expect("sessions")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            !p.file_name()
                .expect("name")
                .to_string_lossy()
                .starts_with('.')
        })
        .expect("the session")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy file");
        }
    }
}
