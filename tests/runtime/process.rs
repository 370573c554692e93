//! The process spawner against real `sh` subprocesses.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crumb::process::{
    AgentEnv, LineFlow, Outcome, SpawnReport, SpawnSpec, Stream, run, run_watched,
};

fn spec(dir: &Path, script: &str) -> SpawnSpec {
    SpawnSpec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: dir.to_path_buf(),
        env: Vec::new(),
        env_remove: Vec::new(),
        stdin: None,
        log_path: dir.join("logs/role-1.log"),
        wall_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(60),
        kill_grace: Duration::from_millis(200),
        pgid_file: None,
    }
}

async fn collect(spec: SpawnSpec) -> (SpawnReport, Vec<(Stream, String)>) {
    let mut lines = Vec::new();
    let report = run(
        spec,
        |stream, line| lines.push((stream, line.to_owned())),
        std::future::pending(),
    )
    .await;
    (report, lines)
}

/// A process is gone when /proc has no entry for it or it is a zombie awaiting its reaper.
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn idle_process_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(
        dir.path(),
        "sleep 300 & echo $! > child.pid; echo started; wait",
    );
    spec.idle_timeout = Duration::from_millis(300);
    let (report, lines) = collect(spec).await;
    assert_eq!(report.outcome, Outcome::IdleTimeout);
    assert_eq!(lines, [(Stream::Stdout, "started".to_owned())]);
    let child = read_pid(&dir.path().join("child.pid"));
    assert!(
        is_gone(child),
        "background child {child} survived the idle kill"
    );
    assert!(is_gone(report.pgid.unwrap()));
    let log = std::fs::read_to_string(dir.path().join("logs/role-1.log")).unwrap();
    assert!(
        log.contains("started\n") && log.contains("killed: idle timeout"),
        "{log}"
    );
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_gets_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        "trap '' TERM; sleep 300 & echo $! > child.pid; echo up; while :; do sleep 1; done";
    let mut spec = spec(dir.path(), script);
    spec.idle_timeout = Duration::from_millis(300);
    let (report, _) = collect(spec).await;
    assert_eq!(report.outcome, Outcome::IdleTimeout);
    assert!(is_gone(read_pid(&dir.path().join("child.pid"))));
    assert!(is_gone(report.pgid.unwrap()));
}

#[tokio::test]
async fn chatty_process_hits_the_wall_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), "while :; do echo tick; sleep 0.05; done");
    spec.wall_timeout = Duration::from_millis(400);
    spec.idle_timeout = Duration::from_secs(30);
    let (report, lines) = collect(spec).await;
    assert_eq!(report.outcome, Outcome::WallTimeout);
    assert!(!lines.is_empty() && lines.iter().all(|(_, line)| line == "tick"));
}

#[tokio::test]
async fn cancel_stops_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let (tell, told) = tokio::sync::oneshot::channel::<()>();
    let mut tell = Some(tell);
    let report = run(
        spec(dir.path(), "echo ready; sleep 300"),
        move |_, _| {
            if let Some(tell) = tell.take() {
                let _ = tell.send(());
            }
        },
        async move {
            let _ = told.await;
        },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Cancelled);
    assert!(is_gone(report.pgid.unwrap()));
}

#[tokio::test]
async fn exit_codes_and_stderr_are_reported_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (report, lines) = collect(spec(dir.path(), "echo out; echo oops >&2; exit 3")).await;
    assert_eq!(report.outcome, Outcome::Exited { code: 3 });
    assert!(lines.contains(&(Stream::Stderr, "oops".to_owned())));
    assert!(lines.contains(&(Stream::Stdout, "out".to_owned())));
    assert_eq!((report.stdout_lines, report.stderr_lines), (1, 1));
    let log = std::fs::read_to_string(dir.path().join("logs/role-1.log")).unwrap();
    assert!(
        log.contains("out\n") && log.contains("[stderr] oops\n") && log.contains("=== exit 3,"),
        "{log}"
    );
    // A signal only when the OS says so; an exit above 128 (Gemini's HTTP status mod 256) is
    // an exit.
    let (killed, _) = collect(spec(dir.path(), "kill -9 $$")).await;
    assert_eq!(killed.outcome, Outcome::Signaled { signal: 9 });
    let (high, _) = collect(spec(dir.path(), "exit 144")).await;
    assert_eq!(high.outcome, Outcome::Exited { code: 144 });
}

#[tokio::test]
async fn missing_binaries_and_directories_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let mut missing = spec(dir.path(), "");
    missing.program = "/nonexistent/agent-cli".into();
    assert_eq!(
        collect(missing).await.0.outcome,
        Outcome::MissingBinary {
            program: "/nonexistent/agent-cli".into()
        }
    );
    let mut on_path = spec(dir.path(), "");
    on_path.program = "crumb-test-no-such-cli".into();
    assert!(matches!(
        collect(on_path).await.0.outcome,
        Outcome::MissingBinary { .. }
    ));
    let mut no_cwd = spec(dir.path(), "true");
    no_cwd.cwd = dir.path().join("gone");
    assert!(matches!(
        collect(no_cwd).await.0.outcome,
        Outcome::SpawnError { .. }
    ));
    let log = std::fs::read_to_string(dir.path().join("logs/role-1.log")).unwrap();
    assert!(log.contains("not started"), "{log}");
}

#[tokio::test]
async fn a_large_prompt_goes_through_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = (0..20_000).fold(String::new(), |mut prompt, n| {
        use std::fmt::Write;
        let _ = writeln!(prompt, "line {n} of a long prompt");
        prompt
    });
    assert!(prompt.len() > 400_000, "well past the 128 KiB argv limit");
    let mut spec = spec(dir.path(), "wc -l; wc -c < /dev/null");
    spec.stdin = Some(prompt.into_bytes());
    let (report, lines) = collect(spec).await;
    assert!(report.outcome.is_success(), "{report:?}");
    assert_eq!(lines[0].1.trim(), "20000");
}

#[tokio::test]
async fn agent_env_identifies_the_spawn_and_puts_crumb_on_path() {
    let dir = tempfile::tempdir().unwrap();
    let crumb_dir = crate::support::crumb_bin().parent().unwrap().to_path_buf();
    let agent = AgentEnv {
        session_dir: dir.path().to_path_buf(),
        session_id: "01JTESTSESSION0000000000000".into(),
        transcript: dir.path().join("transcript.jsonl"),
        actor: "builder".into(),
        harness: "codex".into(),
        provider: "openai".into(),
        model: Some("gpt-5.5-codex".into()),
        crumb_dir: Some(crumb_dir.clone()),
    };
    let mut spec = spec(
        dir.path(),
        "echo \"$CRUMB_ACTOR $CRUMB_HARNESS $CRUMB_PROVIDER $CRUMB_MODEL $CRUMB_SESSION_ID\"; command -v crumb; echo \"${CLAUDECODE:-unset}\"",
    );
    spec.env = agent.vars(std::env::var_os("PATH").as_ref());
    spec.env.push(("CLAUDECODE".into(), "1".into()));
    spec.env_remove = vec![OsString::from("CLAUDECODE")];
    let (_, lines) = collect(spec.clone()).await;
    let text: Vec<&str> = lines.iter().map(|(_, line)| line.as_str()).collect();
    assert_eq!(
        text[0],
        "builder codex openai gpt-5.5-codex 01JTESTSESSION0000000000000"
    );
    assert_eq!(PathBuf::from(text[1]), crumb_dir.join("crumb"));
    assert_eq!(text[2], "1", "explicit vars are applied after removals");
    spec.env.retain(|(name, _)| name != "CLAUDECODE");
    let (_, lines) = collect(spec).await;
    assert_eq!(lines[2].1, "unset");
}

/// The group is on disk before the command's first instruction, and the command runs in it:
/// no instant of a turn can be orphaned unrecorded.
#[tokio::test]
async fn the_process_group_is_recorded_before_the_command_starts() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("logs/role-1.pgid");
    let mut spec = spec(
        dir.path(),
        "cat \"$RECORD\"; cut -d' ' -f5 /proc/$$/stat; echo ok",
    );
    spec.env = vec![("RECORD".into(), record.clone().into())];
    spec.pgid_file = Some(record.clone());
    let (report, lines) = collect(spec).await;
    assert_eq!(report.outcome, Outcome::Exited { code: 0 });
    let pgid = report.pgid.unwrap().to_string();
    let stdout: Vec<&str> = lines.iter().map(|(_, line)| line.as_str()).collect();
    assert_eq!(
        stdout,
        [pgid.as_str(), pgid.as_str(), "ok"],
        "the record existed at start and names the group the command runs in"
    );
    assert!(
        !record.exists(),
        "the record is removed when the group ends"
    );
    assert!(is_gone(report.pgid.unwrap()));
}

/// A command that cannot start leaves no record and no holder behind.
#[tokio::test]
async fn a_missing_program_leaves_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("logs/role-1.pgid");
    let mut spec = spec(dir.path(), "true");
    spec.program = "crumb-no-such-program".into();
    spec.pgid_file = Some(record.clone());
    let (report, _) = collect(spec).await;
    assert!(
        matches!(report.outcome, Outcome::MissingBinary { .. }),
        "{:?}",
        report.outcome
    );
    assert!(!record.exists());
}

/// A recorded group is killed only when one of its processes carries the session's marker: an
/// id reused by someone else's group is never hit.
#[test]
fn kill_orphan_kills_only_a_group_marked_with_its_session() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("role-1.pgid");
    let mut orphan = std::process::Command::new("sleep")
        .arg("60")
        .env("CRUMB_SESSION_ID", "session-a")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = i32::try_from(orphan.id()).unwrap();
    std::fs::write(&record, format!("{pgid}\n")).unwrap();
    assert!(!crumb::process::kill_orphan(&record, "session-b"));
    assert!(!record.exists(), "a record is consumed either way");
    assert!(
        orphan.try_wait().unwrap().is_none(),
        "another session's group lives"
    );

    std::fs::write(&record, format!("{pgid}\n")).unwrap();
    assert!(crumb::process::kill_orphan(&record, "session-a"));
    let status = orphan.wait().unwrap();
    assert!(!status.success(), "killed: {status}");
}

#[tokio::test]
async fn retry_chatter_does_not_hold_off_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // A CLI that keeps printing retry notices and never does anything else.
    let mut spec = spec(dir.path(), "while :; do echo retrying; sleep 0.05; done");
    spec.idle_timeout = Duration::from_millis(400);
    spec.wall_timeout = Duration::from_secs(60);
    let report = run_watched(spec, |_, _| LineFlow::Chatter, std::future::pending()).await;
    assert_eq!(report.outcome, Outcome::IdleTimeout);
    assert!(report.stdout_lines > 1, "it did keep talking");
    assert!(is_gone(report.pgid.unwrap()));
}

#[tokio::test]
async fn a_line_that_settles_the_turn_stops_the_group_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        "sleep 300 & echo $! > child.pid; echo authentication_failed; wait",
    );
    let report = run_watched(
        spec,
        |_, line| {
            if line.contains("authentication_failed") {
                LineFlow::GiveUp
            } else {
                LineFlow::Progress
            }
        },
        std::future::pending(),
    )
    .await;
    assert_eq!(report.outcome, Outcome::GaveUp);
    assert!(is_gone(read_pid(&dir.path().join("child.pid"))));
}
