//! Static and command checks through the real `crumb qa`: paths confined to the artifacts,
//! hard links to outside refused, sizes measured, command output captured and every check bounded
//! by its timeout.

use super::*;

/// A pipeline with only static and command checks, written next to its artifacts.
fn static_pipeline(dir: &Path, checks: &str) -> PathBuf {
    let base = std::fs::read_to_string(repo_root().join("pipelines/doc-review.yaml")).unwrap();
    let start = base.find("qa:\n").unwrap();
    let end = base.find("\nscoring:").unwrap();
    let yaml = format!(
        "{}qa:\n  timeout: 20s\n  checks:\n{checks}\n{}",
        &base[..start],
        &base[end..]
    );
    let path = dir.join("pipeline.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// A hard link inside `artifacts/` to a file outside is not read: the `file` and `html` checks
/// report `path_escape` (artifacts are taken by content, not by link).
#[test]
fn static_checks_refuse_a_hard_link_to_a_file_outside() {
    let root = tempfile::tempdir().unwrap();
    let art = root.path().join("artifacts");
    std::fs::create_dir_all(art.join("game")).unwrap();
    std::fs::write(
        root.path().join("outside.html"),
        "<!doctype html><html><head><meta name=\"viewport\" content=\"w\"></head><body><script>1</script></body></html>",
    )
    .unwrap();
    std::fs::hard_link(
        root.path().join("outside.html"),
        art.join("game/index.html"),
    )
    .unwrap();
    let pipeline = static_pipeline(
        root.path(),
        "    - { id: entry, kind: file, path: game/index.html }
    - { id: lint, kind: html, path: game/index.html }",
    );
    let (run, result, _out) = qa_json(&pipeline, &art, &[]);
    run.expect_code(1);
    for id in ["entry", "lint"] {
        assert_eq!(
            finding_codes(check(&result, id)),
            codes(&["path_escape"]),
            "{id}"
        );
    }
}

#[test]
fn static_checks_confine_paths_and_measure_sizes() {
    let root = tempfile::tempdir().unwrap();
    let art = root.path().join("artifacts");
    std::fs::create_dir_all(art.join("game/assets")).unwrap();
    std::fs::write(
        art.join("game/index.html"),
        "<!doctype html><html><head></head><body><script>1</script></body></html>",
    )
    .unwrap();
    std::fs::write(art.join("game/assets/big.bin"), vec![0u8; 3000]).unwrap();
    std::fs::write(root.path().join("secret.txt"), "outside").unwrap();
    std::os::unix::fs::symlink(root.path().join("secret.txt"), art.join("game/leak.txt")).unwrap();
    let pipeline = static_pipeline(
        root.path(),
        r#"    - { id: escape, kind: file, path: ../secret.txt }
    - { id: via-link, kind: file, path: game/leak.txt }
    - { id: small, kind: file, path: game/index.html, min_size: 1KB }
    - { id: top-only, kind: max_bytes, glob: "game/*.html", limit: 1KB }
    - { id: tree, kind: max_bytes, glob: "game/**", limit: 2KB }
    - { id: lint, kind: html, path: game/index.html, blocking: false }"#,
    );
    let (run, result, _out) = qa_json(&pipeline, &art, &[]);
    run.expect_code(1);
    assert_eq!(
        finding_codes(check(&result, "escape")),
        codes(&["path_escape"])
    );
    assert_eq!(
        finding_codes(check(&result, "via-link")),
        codes(&["path_escape"])
    );
    assert_eq!(
        finding_codes(check(&result, "small")),
        codes(&["too_small"])
    );
    assert_eq!(check(&result, "top-only")["status"], "pass");
    assert_eq!(
        finding_codes(check(&result, "tree")),
        codes(&["over_budget", "path_escape"])
    );
    assert_eq!(
        finding_codes(check(&result, "lint")),
        codes(&["missing_viewport"])
    );
    insta::assert_json_snapshot!("qa_static_checks", redact(&result));
}

#[test]
fn command_checks_capture_output_compare_exit_codes_and_kill_the_group_on_timeout() {
    let root = tempfile::tempdir().unwrap();
    let art = root.path().join("artifacts");
    std::fs::create_dir_all(&art).unwrap();
    let pipeline = static_pipeline(
        root.path(),
        r#"    - { id: hello, kind: command, argv: [sh, -c, 'echo "hello $GREETING"; echo oops >&2'], env: { GREETING: world } }
    - { id: exit3, kind: command, argv: [sh, -c, 'exit 3'], expect_exit: 3 }
    - { id: wrong, kind: command, argv: [sh, -c, 'exit 4'] }
    - { id: hang, kind: command, argv: [sh, -c, 'sleep 30 & echo $! > bg.pid; wait'], timeout: 1s }
    - { id: outside, kind: command, argv: ["true"], cwd: ../ }
    - { id: nothing, kind: command, argv: [/nonexistent/program] }"#,
    );
    let (run, result, _out) = qa_json(&pipeline, &art, &[]);
    run.expect_code(1);
    let hello = check(&result, "hello");
    assert_eq!(hello["status"], "pass");
    assert_eq!(hello["details"]["stdout"], "hello world\n");
    assert_eq!(hello["details"]["stderr"], "oops\n");
    assert_eq!(check(&result, "exit3")["status"], "pass");
    assert_eq!(
        finding_codes(check(&result, "wrong")),
        codes(&["unexpected_exit"])
    );
    assert_eq!(check(&result, "hang")["status"], "timeout");
    assert_eq!(
        finding_codes(check(&result, "outside")),
        codes(&["path_escape"])
    );
    assert_eq!(
        finding_codes(check(&result, "nothing")),
        codes(&["spawn_failed"])
    );
    assert_eq!(
        result["data"]["timed_out"], false,
        "a per-check timeout is not a run timeout"
    );
    // The background sleep was in the killed group: it is gone (or an unreaped zombie).
    let pid: i32 = std::fs::read_to_string(art.join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|r| r.trim().chars().next().unwrap())
        });
    assert!(
        matches!(state, None | Some('Z')),
        "background process {pid} still running: {state:?}"
    );
}

#[test]
fn the_whole_run_is_bounded_by_qa_timeout() {
    let root = tempfile::tempdir().unwrap();
    let art = root.path().join("artifacts");
    std::fs::create_dir_all(&art).unwrap();
    let pipeline = static_pipeline(
        root.path(),
        "    - { id: hang, kind: command, argv: [sleep, '60'] }\n    - { id: later, kind: file, path: x }",
    );
    let yaml = std::fs::read_to_string(&pipeline)
        .unwrap()
        .replace("timeout: 20s", "timeout: 1s");
    std::fs::write(&pipeline, yaml).unwrap();
    let (run, result, _out) = qa_json(&pipeline, &art, &[]);
    run.expect_code(1);
    assert_eq!(result["data"]["timed_out"], true);
    assert_eq!(result["data"]["exec_exit_code"], 2);
    assert_eq!(check(&result, "hang")["status"], "timeout");
    assert_eq!(check(&result, "later")["status"], "timeout");
}
