//! Every process a run starts is recorded in its session before it works, so a coordinator
//! killed with SIGKILL leaves nothing that `crumb resume` does not find and stop.

use super::*;
use crumb::process::reap::{ProcStat, members_of_group};
use std::collections::BTreeSet;

/// Held by each test here that kills a run mid-browser: any QA run sweeps the orphans of dead
/// owners (`qa::browser::profile`), so another test's could take this one's before it looks.
static BROWSER_KILLS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn browser_kills() -> std::sync::MutexGuard<'static, ()> {
    BROWSER_KILLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Processes of group `pgid` that still run (zombies are dead, waiting for their reaper).
fn live_members(pgid: i32) -> Vec<i32> {
    members_of_group(pgid)
        .into_iter()
        .filter(|&pid| ProcStat::read(pid).is_some_and(|stat| stat.state != 'Z'))
        .collect()
}

/// The `*.pgid` records directly in `dir`.
fn records(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map_or_else(
        |_| Vec::new(),
        |entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "pgid"))
                .collect()
        },
    )
}

/// A record's group id and second line (a browser's profile folder).
fn read_record(record: &Path) -> Option<(i32, String)> {
    let text = std::fs::read_to_string(record).ok()?;
    let mut lines = text.lines();
    let pgid = lines.next()?.trim().parse().ok()?;
    Some((pgid, lines.next().unwrap_or_default().to_owned()))
}

/// Whether process `pid`'s command line contains `needle`.
fn cmdline_contains(pid: i32, needle: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmd| String::from_utf8_lossy(&cmd).contains(needle))
}

/// Wait until a QA group is recorded in the only session of `home` with a running member whose
/// command line contains `needle`: the session, the group id and the record's second line.
fn qa_group_running(home: &Path, what: &str, needle: &str) -> (PathBuf, i32, String) {
    eventually(what, Duration::from_secs(90), || {
        let session = any_session(home)?;
        records(&session.join("qa")).into_iter().find_map(|record| {
            let (pgid, extra) = read_record(&record)?;
            live_members(pgid)
                .into_iter()
                .any(|pid| cmdline_contains(pid, needle))
                .then(|| (session.clone(), pgid, extra))
        })
    })
}

/// `crumb resume` the session to a pass, then require that no process of group `pgid` runs.
fn resume_to_pass_and_expect_gone(scratch: &Scratch, session: &Path, pgid: i32) {
    let resumed = scratch.resume(session);
    assert_eq!(summary(&resumed)["reason"], "verdict_pass");
    assert_eq!(
        live_members(pgid),
        Vec::<i32>::new(),
        "processes of the killed run's group {pgid} survived resume"
    );
}

#[test]
fn sigkill_during_browser_qa_leaves_no_process_or_profile_after_resume() {
    let _serial = browser_kills();
    crate::support::chromium();
    let scratch = Scratch::new();
    let pipeline = scratch.dir.path().join("pipelines/casual.yaml");
    std::fs::copy(repo_root().join("pipelines/casual.yaml"), &pipeline).unwrap();
    let child = scratch
        .command(&["run"])
        .arg(&pipeline)
        .arg(PITCH)
        .args(["--adapter", "mock", "--json"])
        .spawn();
    // Debian's `chromium` is a shell script that execs the browser; a kill while only the script
    // runs takes it down with its stderr pipe (nothing is orphaned then, so nothing is proven).
    // A `--type=` child means the real browser is up and forking its helpers.
    let (_, pgid, profile) = qa_group_running(
        &scratch.home(),
        "the browser itself (past its launcher script) in a recorded QA group",
        "--type=",
    );
    let profile = PathBuf::from(profile);
    child.kill();
    assert!(
        !live_members(pgid).is_empty(),
        "the killed run's browser outlives it (or this test proves nothing)"
    );
    assert!(profile.is_dir(), "its profile is still there: {profile:?}");

    let session = scratch.session();
    resume_to_pass_and_expect_gone(&scratch, &session, pgid);
    assert!(!profile.exists(), "the orphaned profile was removed");
    assert_eq!(records(&session.join("qa")), Vec::<PathBuf>::new());
    assert_eq!(records(&session.join("logs")), Vec::<PathBuf>::new());
}

#[test]
fn resume_kills_a_hung_orphaned_turn_through_its_record_and_runs_it_once() {
    let scratch = Scratch::new();
    let child = scratch.spawn_run("hang-once", 0, &[]);
    let home = scratch.home();
    let (session, pgid) = eventually(
        "the hanging builder running in its recorded group",
        Duration::from_secs(60),
        || {
            let session = any_session(&home)?;
            let (pgid, _) = read_record(&session.join("logs/builder-1.pgid"))?;
            let log = std::fs::read_to_string(session.join("logs/builder-1.log")).ok()?;
            (log.contains("hanging with child") && live_members(pgid).len() >= 2)
                .then_some((session, pgid))
        },
    );
    child.kill();
    assert!(
        live_members(pgid).len() >= 2,
        "the builder and its child outlive the killed coordinator"
    );

    resume_to_pass_and_expect_gone(&scratch, &session, pgid);
    let events = transcript(&session);
    assert_effects_once(&events);
    assert_eq!(
        count(&events, "builder", "agent.wake"),
        2,
        "one cut short, one redone"
    );
    assert_eq!(count(&events, "builder", "agent.stop"), 1);
    assert_eq!(
        count(&events, "builder", "build"),
        1,
        "the turn ran to a build once"
    );
    assert!(!session.join("logs/builder-1.pgid").exists());
}

#[test]
fn sigkill_during_a_qa_command_leaves_nothing_after_resume() {
    let scratch = Scratch::new();
    let pipeline = scratch.pipeline();
    let yaml = std::fs::read_to_string(&pipeline).unwrap();
    let html = "    - { id: html, kind: html, path: game/index.html }\n";
    let slow =
        "    - { id: slow, kind: command, argv: [sh, -c, \"test -e release || sleep 120\"] }\n";
    assert!(yaml.contains(html));
    std::fs::write(&pipeline, yaml.replace(html, &format!("{html}{slow}"))).unwrap();
    let child = scratch.spawn_run("pass", 0, &[]);
    // Wait for the check itself (not only the group's holder) to be running in the group.
    let (session, pgid, _) = qa_group_running(
        &scratch.home(),
        "the slow QA command running in its recorded group",
        "release",
    );
    child.kill();
    assert!(
        !live_members(pgid).is_empty(),
        "the killed run's QA command outlives it"
    );

    std::fs::write(session.join("artifacts/release"), b"").unwrap();
    resume_to_pass_and_expect_gone(&scratch, &session, pgid);
    assert_eq!(records(&session.join("qa")), Vec::<PathBuf>::new());
}

/// A `crumb qa` outside any session, killed (SIGKILL) while its browser runs, leaves a browser no
/// `crumb resume` will come for: the next standalone `crumb qa` of the same home reaps it.
#[test]
fn a_killed_standalone_qa_leaves_its_browser_to_the_next_one_to_reap() {
    let _serial = browser_kills();
    crate::support::chromium();
    let scratch = Scratch::new();
    let out = scratch.dir.path().join("qa-out");
    let games = repo_root().join("tests/fixtures/games");
    let qa = |game: &str, out: &Path| {
        scratch
            .command(&["qa"])
            .arg(repo_root().join("pipelines/casual.yaml"))
            .arg(games.join(game))
            .arg("--out")
            .arg(out)
    };
    // The infinite loop keeps the browser busy until the check's timeout: time enough to kill.
    let child = qa("infinite-loop", &out).spawn();
    let (pgid, profile) = eventually(
        "the standalone run's browser itself running in its recorded group",
        Duration::from_secs(90),
        || {
            records(&out).into_iter().find_map(|record| {
                let (pgid, extra) = read_record(&record)?;
                live_members(pgid)
                    .into_iter()
                    .any(|pid| cmdline_contains(pid, "--type="))
                    .then_some((pgid, PathBuf::from(extra)))
            })
        },
    );
    child.kill();
    assert!(
        !live_members(pgid).is_empty(),
        "the killed run's browser outlives it (or this test proves nothing)"
    );
    assert!(profile.is_dir(), "its profile is still there: {profile:?}");

    qa("good", &scratch.dir.path().join("qa-out-2"))
        .run()
        .expect_code(0);
    assert_eq!(
        live_members(pgid),
        Vec::<i32>::new(),
        "the killed run's browser survived the next crumb qa"
    );
    assert!(!profile.exists(), "the orphaned profile was removed");
    assert_eq!(records(&out), Vec::<PathBuf>::new());
    let registry = scratch.home().join("run/qa");
    assert_eq!(
        std::fs::read_dir(&registry).map_or(0, Iterator::count),
        0,
        "registrations left in {registry:?}"
    );
}

/// The names in `dir` that start with `prefix`.
fn names_in(dir: &Path, prefix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir).map_or_else(
        |_| BTreeSet::new(),
        |entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(prefix))
                .collect()
        },
    )
}

/// A run killed (SIGKILL) mid-browser leaves its browser and its profile; the next QA run, even
/// of another session (which reaps no record of the killed one), removes them because their
/// owner is gone, and leaves alone the profile of a QA that is running meanwhile. `/dev/shm` (where
/// profiles go) and `$TMPDIR` are listed before and after.
#[test]
fn the_next_qa_run_removes_what_a_killed_one_left_and_keeps_a_running_ones_profile() {
    let _serial = browser_kills();
    crate::support::chromium();
    let scratch = Scratch::new();
    let tmp = scratch.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let shm = Path::new("/dev/shm");
    let profiles = "crumb-qa-profile-";
    let tmp_before = names_in(&tmp, "");
    let pipeline = scratch.dir.path().join("pipelines/casual.yaml");
    std::fs::copy(repo_root().join("pipelines/casual.yaml"), &pipeline).unwrap();
    let games = repo_root().join("tests/fixtures/games");
    let command = |args: &[&str]| {
        scratch
            .command(args)
            .env("TMPDIR", &tmp)
            .env("CRUMB_BROWSER_SLOTS", "4")
    };
    let qa = |game: &str, out: &str| {
        command(&["qa"])
            .arg(&pipeline)
            .arg(games.join(game))
            .arg("--out")
            .arg(scratch.dir.path().join(out))
    };

    let killed = command(&["run"])
        .arg(&pipeline)
        .arg(PITCH)
        .args(["--adapter", "mock", "--json"])
        .spawn();
    let killed_pid = killed.id();
    let (_, pgid, profile) = qa_group_running(
        &scratch.home(),
        "the killed run's browser itself (past its launcher script)",
        "--type=",
    );
    let profile = PathBuf::from(profile);
    killed.kill();
    assert!(
        !live_members(pgid).is_empty() && profile.is_dir(),
        "the killed run's browser and profile outlive it (or this test proves nothing)"
    );
    let owned_by = |pid: u32| format!("{profiles}{pid}-");
    assert!(
        profile
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&owned_by(killed_pid))),
        "a profile is named after its owner: {profile:?}"
    );

    // A QA that runs meanwhile: the infinite loop holds its browser until the check's timeout.
    let busy = qa("infinite-loop", "busy-out").spawn();
    let busy_pid = busy.id();
    let busy_profile = eventually(
        "the running QA's browser and its profile",
        Duration::from_secs(90),
        || {
            records(&scratch.dir.path().join("busy-out"))
                .into_iter()
                .find_map(|record| {
                    let (pgid, extra) = read_record(&record)?;
                    live_members(pgid)
                        .into_iter()
                        .any(|pid| cmdline_contains(pid, "--type="))
                        .then(|| PathBuf::from(extra))
                })
        },
    );

    // The next QA run: another session's, not a resume of the killed one.
    let next = qa("good", "next-out").spawn();
    let next_pid = next.id();
    next.wait().expect_code(0);
    assert_eq!(
        live_members(pgid),
        Vec::<i32>::new(),
        "the killed run's browser survived the next QA run"
    );
    assert!(
        !profile.exists(),
        "the killed run's profile was left: {profile:?}"
    );
    for pid in [killed_pid, next_pid] {
        assert_eq!(
            names_in(shm, &owned_by(pid)),
            BTreeSet::new(),
            "left in /dev/shm"
        );
    }
    assert!(
        busy_profile.is_dir(),
        "the running QA's profile was removed"
    );
    let busy_shm = names_in(shm, &owned_by(busy_pid));
    assert_eq!(busy_shm.len(), 1, "the running QA's profile: {busy_shm:?}");
    assert_eq!(names_in(&tmp, ""), tmp_before, "left in $TMPDIR");

    // Killed in turn, the busy QA's leftovers go with the next run too.
    busy.kill();
    qa("good", "last-out").run().expect_code(0);
    assert!(!busy_profile.exists(), "the killed QA's profile was left");
    assert_eq!(names_in(shm, &owned_by(busy_pid)), BTreeSet::new());
    assert_eq!(names_in(&tmp, ""), tmp_before, "left in $TMPDIR");
}
