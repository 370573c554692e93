//! The artifact store and what stands on it: every recorded file kept once by content, the cap,
//! damage reported (never used), releases, `copy-artifacts` and `diff`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::fork::lines;
use crate::run::Scratch;
use crate::support::crumb;

fn sha(bytes: &[u8]) -> String {
    crumb_core::digest::sha256_hex(bytes)
}

fn object(session: &Path, sha: &str) -> PathBuf {
    session.join("objects").join(&sha[..2]).join(&sha[2..])
}

/// `crumb event` as a turn of the builder in the session folder `dir` (a real capability; an
/// authority record letting the builder write `build` unless the test wrote its own).
fn builder_event(dir: &Path, session_id: &str, draft: &Value) -> crate::support::Run {
    let authority = dir.join("authority.json");
    if !authority.exists() {
        std::fs::write(
            &authority,
            json!({"roles": {"builder": ["build"]}, "common": ["note"]}).to_string(),
        )
        .unwrap();
    }
    let capability = crate::support::open_turn(dir, session_id, "builder");
    crumb()
        .arg("event")
        .env("CRUMB_CAPABILITY", capability.token())
        .stdin(draft.to_string())
        .run()
}

/// Write `files` under `dir/artifacts/` and record them in one `build`.
fn build(dir: &Path, session_id: &str, files: &[(&str, &[u8])]) -> crate::support::Run {
    let mut artifacts = Vec::new();
    for (path, bytes) in files {
        let file = dir.join("artifacts").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, bytes).unwrap();
        artifacts.push(json!({"path": format!("artifacts/{path}"), "sha256": sha(bytes)}));
    }
    builder_event(
        dir,
        session_id,
        &json!({"kind": "build", "body": "built", "artifacts": artifacts}),
    )
}

#[test]
fn a_recorded_file_is_stored_before_its_event_and_identical_content_once() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), "s-1", &[("game/index.html", b"<html>")]).expect_code(0);
    let hash = sha(b"<html>");
    let stored = std::fs::read(object(dir.path(), &hash)).unwrap();
    assert_eq!(stored, b"<html>");
    // The same content again (another build, another path): still one object.
    build(dir.path(), "s-1", &[("game/copy.html", b"<html>")]).expect_code(0);
    let fan: Vec<_> = std::fs::read_dir(dir.path().join("objects"))
        .unwrap()
        .flatten()
        .flat_map(|fan| std::fs::read_dir(fan.path()).unwrap().flatten())
        .collect();
    assert_eq!(fan.len(), 1, "two identical builds store one object");
    // The agent rewriting its file in place does not reach the stored object.
    std::fs::write(dir.path().join("artifacts/game/index.html"), b"changed").unwrap();
    assert_eq!(std::fs::read(object(dir.path(), &hash)).unwrap(), b"<html>");
}

#[test]
fn a_build_past_the_store_cap_is_refused_with_an_audit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("authority.json"),
        json!({"roles": {"builder": ["build"]}, "common": ["note"], "store_cap_mb": 1}).to_string(),
    )
    .unwrap();
    let big = vec![b'x'; (1 << 20) + 1];
    let run = build(dir.path(), "s-1", &[("game/big.bin", &big)]).expect_code(2);
    assert!(run.stderr.contains("limits.max_store_mb"), "{}", run.stderr);
    let events: Vec<Value> = lines(dir.path())
        .into_iter()
        .filter(|e| e["kind"] != "agent.wake")
        .collect();
    assert_eq!(events.len(), 1, "only the audit is written: {events:?}");
    assert_eq!(events[0]["kind"], "audit");
    assert_eq!(
        events[0]["data"]["violation"],
        "artifact_store_cap_exceeded"
    );
    assert!(!object(dir.path(), &sha(&big)).exists());
    // Under the cap the same session takes a build.
    build(dir.path(), "s-1", &[("game/small.bin", b"small")]).expect_code(0);
}

/// One damaged object: `status` and `doctor` name it, and a fork that needs it is refused
/// instead of using it.
#[test]
fn a_corrupt_object_is_reported_and_never_used() {
    let scratch = Scratch::new();
    let session = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    let events = lines(&session);
    let first_build = events.iter().find(|e| e["kind"] == "build").unwrap();
    let artifact = &first_build["artifacts"][0];
    let hash = artifact["sha256"].as_str().unwrap();
    let path = object(&session, hash);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"not what was built").unwrap();

    let status = scratch
        .command(&["status"])
        .arg(&session)
        .run()
        .expect_code(0);
    assert!(
        status.stdout.contains("store     1 corrupt, 0 missing"),
        "{}",
        status.stdout
    );
    let doctor = scratch
        .command(&["doctor", "--json", "--home"])
        .arg(scratch.home())
        .run();
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let problems = report["problems"].to_string();
    assert!(problems.contains("1 corrupt"), "{problems}");

    let qa = events.iter().find(|e| e["kind"] == "qa.result").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = scratch
        .command(&["fork"])
        .arg(&session)
        .args(["--at", &qa, "--mock-scenario", "pass"])
        .run()
        .expect_code(2);
    assert!(refused.stderr.contains("corrupt"), "{}", refused.stderr);
}

/// A finished session given one more build whose `game/` tree has subfolders.
fn session_with_a_nested_game(scratch: &Scratch) -> (PathBuf, String) {
    let session = crate::export::fail_once_session(scratch, &scratch.pipeline(), "a dodger");
    let id = session.file_name().unwrap().to_str().unwrap().to_owned();
    let run = build(
        &session,
        &id,
        &[
            ("game/index.html", b"<html>nested</html>"),
            ("game/assets/sprites/hero.png", b"\x89PNG\0hero"),
            ("game/src/levels/one.json", b"{\"level\":1}"),
        ],
    )
    .expect_code(0);
    let written: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    (session, written["id"].as_str().unwrap().to_owned())
}

#[test]
fn a_release_copies_a_nested_tree_verified_and_refuses_to_overwrite() {
    let scratch = Scratch::new();
    let (session, build_id) = session_with_a_nested_game(&scratch);
    let released = scratch
        .command(&["release"])
        .arg(&session)
        .args([
            "--at",
            &build_id,
            "--as",
            "nested",
            "--note",
            "subfolders",
            "--json",
        ])
        .run()
        .expect_code(0);
    let manifest: Value = serde_json::from_str(&released.stdout).unwrap();
    assert_eq!(manifest["name"], "nested");
    assert_eq!(manifest["at"], build_id.as_str());
    let paths: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"game/assets/sprites/hero.png"), "{paths:?}");
    // A name is unique in the project.
    let again = scratch
        .command(&["release"])
        .arg(&session)
        .args(["--as", "nested"])
        .run()
        .expect_code(2);
    assert!(again.stderr.contains("exists"), "{}", again.stderr);
    // The default: the build the final verdict judged, with that verdict.
    let default = scratch
        .command(&["release", "--json"])
        .arg(&session)
        .run()
        .expect_code(0);
    let default: Value = serde_json::from_str(&default.stdout).unwrap();
    assert_eq!(default["name"], "v1");
    assert_eq!(default["judged"]["verdict"], "PASS");
    let listed = scratch
        .command(&["versions", "--json"])
        .run()
        .expect_code(0);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);

    copies_verified_and_refuses_to_overwrite(&scratch);
}

/// `copy-artifacts` of the `nested` version: a dry run, a copy, a refusal, `--force`, and a
/// tampered version file refused by name.
fn copies_verified_and_refuses_to_overwrite(scratch: &Scratch) {
    let out = scratch.dir.path().join("out");
    let dry = scratch
        .command(&["copy-artifacts", "nested", "--dry-run", "--to"])
        .arg(&out)
        .run()
        .expect_code(0);
    assert!(
        dry.stdout.contains("would copy game/src/levels/one.json"),
        "{}",
        dry.stdout
    );
    assert!(!out.exists(), "a dry run writes nothing");
    scratch
        .command(&["copy-artifacts", "nested", "--to"])
        .arg(&out)
        .run()
        .expect_code(0);
    assert_eq!(
        std::fs::read(out.join("game/assets/sprites/hero.png")).unwrap(),
        b"\x89PNG\0hero"
    );
    let refused = scratch
        .command(&["copy-artifacts", "nested", "--to"])
        .arg(&out)
        .run()
        .expect_code(2);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    std::fs::write(out.join("game/index.html"), b"edited").unwrap();
    scratch
        .command(&["copy-artifacts", "nested", "--force", "--to"])
        .arg(&out)
        .run()
        .expect_code(0);
    assert_eq!(
        std::fs::read(out.join("game/index.html")).unwrap(),
        b"<html>nested</html>"
    );
    // A version file that no longer has its recorded content is refused, naming it.
    let version = scratch
        .home()
        .join("projects")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("versions/nested/files/game/src/levels/one.json");
    std::fs::remove_file(&version).unwrap();
    std::fs::write(&version, b"{\"level\":2}").unwrap();
    let tampered = scratch
        .command(&["copy-artifacts", "nested", "--to"])
        .arg(scratch.dir.path().join("fresh"))
        .run()
        .expect_code(2);
    assert!(
        tampered.stderr.contains("game/src/levels/one.json"),
        "{}",
        tampered.stderr
    );
    assert!(!scratch.dir.path().join("fresh/game/index.html").exists());
}

#[test]
fn diff_between_the_two_builds_of_a_fail_once_session_lists_the_changed_files() {
    let scratch = Scratch::new();
    let session = crate::export::fail_once_session(&scratch, &scratch.pipeline(), "a dodger");
    let events = lines(&session);
    let builds: Vec<&Value> = events.iter().filter(|e| e["kind"] == "build").collect();
    assert_eq!(builds.len(), 2);
    let hashes = |build: &Value| -> std::collections::BTreeMap<String, String> {
        build["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["path"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("artifacts/")
                        .to_owned(),
                    a["sha256"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let (before, after) = (hashes(builds[0]), hashes(builds[1]));
    let changed: Vec<&String> = after
        .iter()
        .filter(|(path, hash)| before.get(*path) != Some(hash))
        .map(|(path, _)| path)
        .collect();
    assert!(!changed.is_empty(), "the repair changed a file");
    let ids = [
        builds[0]["id"].as_str().unwrap(),
        builds[1]["id"].as_str().unwrap(),
    ];
    let diff = scratch
        .command(&["diff", "--json"])
        .arg(&session)
        .args(ids)
        .run()
        .expect_code(0);
    let rows: Value = serde_json::from_str(&diff.stdout).unwrap();
    let listed: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        changed.iter().map(|p| p.as_str()).collect::<Vec<_>>()
    );
    let human = scratch
        .command(&["diff"])
        .arg(&session)
        .args(ids)
        .run()
        .expect_code(0);
    assert!(
        human.stdout.contains(&format!("changed {}", changed[0])),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.lines().any(|l| l.starts_with("    + ")),
        "a text diff of the changed file: {}",
        human.stdout
    );
}
