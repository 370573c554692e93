//! Shared helpers for the integration tests: run the real `crumb` binary with a timeout, wait for
//! a condition with a deadline, find Chromium, and expand one `#[test]` per fixture file.
#![allow(dead_code)]

use std::future::Future;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use wait_timeout::ChildExt;

/// How long a `crumb` process may run unless the test says otherwise: long enough for a whole
/// mock session with browser QA on a loaded machine, short enough that a hang fails the test.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The repository root (where `Cargo.toml` lives).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Path of the `crumb` binary built for these tests.
pub fn crumb_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_crumb"))
}

/// A `crumb` invocation being built, in the style of `just`'s test builder. Every run is bounded:
/// past its timeout the process group is killed and the test panics saying what hung.
pub struct Crumb {
    cmd: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
}

/// Open a turn of `role` in `session` (id `session_id`) as the dispatcher does: an `agent.wake`
/// with a unique effect id naming a fresh capability, registered in the session.
pub fn open_turn(
    session: &Path,
    session_id: &str,
    role: &str,
) -> crumb::runtime::capability::Capability {
    use crumb::transcript::{Draft, Kind, Metadata};
    static TURNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = TURNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut writer =
        crumb::transcript::writer::Writer::open(session.join("transcript.jsonl"), session_id)
            .expect("open the transcript");
    let wake = Draft::new(role, Kind::AgentWake).metadata(Metadata {
        effect_id: Some(format!("test-turn:{role}:{}:{n}", std::process::id())),
        ..Metadata::default()
    });
    let (_, capability) =
        crumb::runtime::capability::open_turn(session, &mut writer, wake).expect("open a turn");
    capability
}

/// A project folder holding `files` (path relative to it, text).
pub fn project_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }
    dir
}

/// Start building a `crumb` invocation run from the repository root, with a clean environment
/// for the variables crumb reads.
pub fn crumb() -> Crumb {
    Crumb::new()
}

impl Default for Crumb {
    fn default() -> Self {
        Self::new()
    }
}

impl Crumb {
    /// A `crumb` invocation from the repository root, hermetic for the variables crumb reads.
    pub fn new() -> Crumb {
        Crumb::program(Command::new(crumb_bin()))
    }

    /// `sh -c script` with the same environment and `$CRUMB` naming the binary, for tests that
    /// drive crumb from a shell loop; the timeout covers the shell and every crumb it starts.
    pub fn shell(script: &str) -> Crumb {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script).env("CRUMB", crumb_bin());
        Crumb::program(cmd)
    }

    fn program(mut cmd: Command) -> Crumb {
        cmd.current_dir(repo_root());
        for var in [
            "GITHUB_ACTIONS",
            "CRUMB_ACTOR",
            "CRUMB_HARNESS",
            "CRUMB_PROVIDER",
            "CRUMB_MODEL",
            "CRUMB_SESSION_DIR",
            "CRUMB_SESSION_ID",
            "CRUMB_TRANSCRIPT_PATH",
            "CRUMB_CAPABILITY",
            "CRUMB_HOME",
            // Markers of an enclosing agent CLI: ambient binding detection must not see them.
            "CLAUDECODE",
            "CLAUDE_CODE_SESSION_ID",
            "CLAUDE_CODE_ENTRYPOINT",
            "CODEX_SESSION_ID",
            "OPENAI_AGENT_SESSION",
            "GEMINI_CLI",
            "GEMINI_SESSION_ID",
            "GEMINI_CLI_SESSION",
            // A collector configured on the developer's machine must not receive test runs.
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_SERVICE_NAME",
            "OTEL_SDK_DISABLED",
        ] {
            cmd.env_remove(var);
        }
        // Hermetic bindings: an agent CLI installed on the developer's PATH must not be picked up.
        cmd.env("CRUMB_AMBIENT_ADAPTER", "mock");
        cmd.env("NO_COLOR", "1");
        // Its own process group, so a timeout kills crumb and everything it started at once.
        cmd.process_group(0);
        Crumb {
            cmd,
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    /// Run as a turn of `role` in the session folder `session`, the way the dispatcher starts an
    /// agent: a real `agent.wake` naming a fresh capability, and `CRUMB_CAPABILITY` set (the only
    /// thing `crumb event` takes a role and a session from). The session id is the transcript's,
    /// or the folder's name for an empty one.
    pub fn turn(self, session: &Path, role: &str) -> Self {
        let id = crumb::transcript::reader::read_path(&session.join("transcript.jsonl"))
            .ok()
            .and_then(|(events, _)| events.first().map(|e| e.session_id.clone()))
            .unwrap_or_else(|| session.file_name().unwrap().to_string_lossy().into_owned());
        let capability = open_turn(session, &id, role);
        self.env("CRUMB_CAPABILITY", capability.token())
    }

    pub fn env_remove(mut self, key: &str) -> Self {
        self.cmd.env_remove(key);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// How long the process may run before it is killed and the test fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Run to completion (bounded by the timeout) and capture stdout, stderr and the exit code.
    #[track_caller]
    pub fn run(self) -> Run {
        self.spawn().wait()
    }

    /// Start the process in the background; [`Running::wait`] collects it, dropping it kills it.
    #[track_caller]
    pub fn spawn(self) -> Running {
        self.spawn_with_lines(None)
    }

    /// [`Crumb::spawn`], also sending each line of stdout (without its newline) as it is written,
    /// so a test can act once the process has said something.
    #[track_caller]
    pub fn spawn_lines(self) -> (Running, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel();
        (self.spawn_with_lines(Some(tx)), rx)
    }

    #[track_caller]
    fn spawn_with_lines(mut self, lines: Option<mpsc::Sender<String>>) -> Running {
        let shown = format!("{:?}", self.cmd);
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {shown}: {e}"));
        if let (Some(input), Some(mut pipe)) = (self.stdin.take(), child.stdin.take()) {
            // A process may exit before reading all input; that is its answer, not a test failure.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&input);
            });
        }
        let stdout = drain(child.stdout.take(), lines);
        let stderr = drain(child.stderr.take(), None);
        Running {
            child: Some(child),
            deadline: Instant::now() + self.timeout,
            timeout: self.timeout,
            shown,
            stdout,
            stderr,
        }
    }
}

/// Read a pipe to its end on a thread, so a chatty process never blocks on a full pipe; each
/// complete line is also sent to `lines` when given.
fn drain(
    pipe: Option<impl Read + Send + 'static>,
    lines: Option<mpsc::Sender<String>>,
) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(pipe) = pipe {
        std::thread::spawn(move || {
            let mut pipe = std::io::BufReader::new(pipe);
            let mut bytes = Vec::new();
            loop {
                let start = bytes.len();
                match std::io::BufRead::read_until(&mut pipe, b'\n', &mut bytes) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if let Some(lines) = &lines {
                            let line = String::from_utf8_lossy(&bytes[start..]);
                            let _ = lines.send(line.trim_end_matches('\n').to_owned());
                        }
                    }
                }
            }
            let _ = tx.send(bytes);
        });
    }
    rx
}

/// A `crumb` process running in the background, killed with its group when dropped.
pub struct Running {
    child: Option<Child>,
    deadline: Instant,
    timeout: Duration,
    shown: String,
    stdout: mpsc::Receiver<Vec<u8>>,
    stderr: mpsc::Receiver<Vec<u8>>,
}

impl Running {
    /// The process id (also its process group id).
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Send `signal` to the process alone (not its group), as a terminal or supervisor would.
    pub fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(i32::try_from(self.id()).expect("pid fits"));
        nix::sys::signal::kill(pid, signal).expect("signal crumb");
    }

    /// Whether the process has exited (it is reaped; [`Running::wait`] then collects at once).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(Some(_))))
    }

    /// SIGKILL the process alone and reap it; what it started is left as a crash would leave it.
    pub fn kill(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGKILL the process alone unless it has already exited: `Some` with what it did when it
    /// had (nothing was killed), `None` when it was killed as [`Running::kill`] does.
    #[track_caller]
    pub fn kill_unless_exited(mut self) -> Option<Run> {
        let child = self.child.as_mut().expect("not yet collected");
        if let Ok(Some(status)) = child.try_wait() {
            self.child = None;
            return Some(self.collect(status));
        }
        self.kill();
        None
    }

    /// Wait for the process to exit (bounded by its timeout) and capture what it wrote.
    #[track_caller]
    pub fn wait(mut self) -> Run {
        let mut child = self.child.take().expect("not yet collected");
        let left = self.deadline.saturating_duration_since(Instant::now());
        let status = child.wait_timeout(left).expect("wait for crumb");
        let Some(status) = status else {
            kill_group(&mut child);
            let grace = Duration::from_secs(2);
            panic!(
                "crumb did not finish within {:?} and was killed with its process group: {}\n--- stdout\n{}\n--- stderr\n{}",
                self.timeout,
                self.shown,
                collect(&self.stdout, grace),
                collect(&self.stderr, grace),
            );
        };
        self.collect(status)
    }

    /// What an exited process wrote, read once everything holding its pipes has let go.
    #[track_caller]
    fn collect(&self, status: std::process::ExitStatus) -> Run {
        // The pipes close when every process holding them exits; bound that wait too.
        let grace = self
            .deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(5));
        let (Ok(stdout), Ok(stderr)) = (
            self.stdout.recv_timeout(grace),
            self.stderr.recv_timeout(grace),
        ) else {
            panic!(
                "crumb exited ({status}) but something it started still holds its stdout or stderr: {}",
                self.shown
            );
        };
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            kill_group(child);
        }
    }
}

/// SIGKILL the child's whole process group and reap the child.
fn kill_group(child: &mut Child) {
    if let Ok(pgid) = i32::try_from(child.id()) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let _ = child.wait();
}

/// What a reader thread captured, or a note that it did not finish in `grace`.
fn collect(rx: &mpsc::Receiver<Vec<u8>>, grace: Duration) -> String {
    rx.recv_timeout(grace).map_or_else(
        |_| "[still open]".to_owned(),
        |bytes| String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// What a finished `crumb` process did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Assert the exit code, showing the output when it differs.
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "unexpected exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Assert a scripted client (the MCP and LSP end-to-end tests) exited 0 and printed every one
    /// of its `steps`.
    #[track_caller]
    pub fn expect_steps(self, steps: &[&str]) -> Self {
        let run = self.expect_code(0);
        for step in steps {
            assert!(
                run.stdout.contains(step),
                "missing `{step}` in:\n{}",
                run.stdout
            );
        }
        run
    }
}

/// Longest pause between two polls: short enough to notice a change quickly.
const MAX_BACKOFF: Duration = Duration::from_millis(100);

/// Poll `probe` until it returns `Some`, backing off from 5 ms to 100 ms; panic naming `what`
/// once `limit` has passed. The one way tests wait for a file, a line or a state.
#[track_caller]
pub fn eventually<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

/// [`eventually`] inside an async test (it never blocks the runtime's thread). Returns `None` at
/// the deadline instead of panicking, so the caller can record what the page showed first.
pub async fn eventually_async<T, F>(limit: Duration, mut probe: impl FnMut() -> F) -> Option<T>
where
    F: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(value) = probe().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

/// The Chromium the product itself would use (`crumb::qa::browser::locate`); browser tests fail
/// loudly with the install hint instead of silently skipping.
#[track_caller]
pub fn chromium() -> PathBuf {
    crumb::qa::browser::locate::locate()
        .unwrap_or_else(|err| panic!("this test needs a real Chromium: {err}"))
}

/// Every file directly in `folder` (relative to the repository root) whose name ends with
/// `suffix`, as names relative to the folder, sorted.
pub fn fixture_names(folder: &str, suffix: &str) -> Vec<String> {
    let dir = repo_root().join(folder);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable entry").file_name())
        .filter_map(|name| name.into_string().ok())
        .filter(|name| name.ends_with(suffix))
        .collect();
    names.sort();
    names
}

/// Fail when `folder` holds a fixture that has no test of its own (or a listed one is gone).
#[track_caller]
pub fn assert_fixtures_listed(folder: &str, suffix: &str, listed: &[&str]) {
    let on_disk = fixture_names(folder, suffix);
    let mut listed: Vec<&str> = listed.to_vec();
    listed.sort_unstable();
    let unlisted: Vec<&String> = on_disk
        .iter()
        .filter(|name| !listed.contains(&name.as_str()))
        .collect();
    let missing: Vec<&&str> = listed
        .iter()
        .filter(|name| !on_disk.iter().any(|n| n == *name))
        .collect();
    assert!(
        unlisted.is_empty() && missing.is_empty(),
        "{folder}: fixtures without a test (add them to the fixture_tests! list): {unlisted:?}; listed but absent: {missing:?}"
    );
}

/// One `#[test]` per fixture file, so one failing fixture never hides the others, plus a test
/// that fails when the folder holds a fixture missing from the list.
///
/// ```ignore
/// fixture_tests! {
///     folder: "tests/pipelines/invalid", suffix: ".yaml", check: check_invalid, listed: every_invalid_fixture_has_a_test,
///     invalid_bad_duration => "bad-duration.yaml",
/// }
/// ```
/// Each test calls `check("<folder>/<file>")`.
macro_rules! fixture_tests {
    (
        folder: $folder:literal, suffix: $suffix:literal, check: $check:path, listed: $listed:ident,
        $($test:ident => $file:literal),* $(,)?
    ) => {
        $(
            #[test]
            fn $test() {
                $check(concat!($folder, "/", $file));
            }
        )*

        #[test]
        fn $listed() {
            $crate::support::assert_fixtures_listed($folder, $suffix, &[$($file),*]);
        }
    };
}

/// Copy the folder `from` to `to`, recursively (a scratch project's templates).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A scratch project at `project` holding the static casual pipeline
/// (`pipelines/casual-static.yaml`, browser-free QA) next to a copy of `templates/`.
pub fn casual_static_project(project: &Path) {
    std::fs::create_dir_all(project.join("pipelines")).expect("mkdir");
    std::fs::copy(
        repo_root().join("tests/fixtures/run/casual-static.yaml"),
        project.join("pipelines/casual-static.yaml"),
    )
    .expect("copy pipeline");
    copy_dir(&repo_root().join("templates"), &project.join("templates"));
}

/// The folder of the one session under the crumb home `home` once its transcript holds a
/// `session.awaiting` (a PARTIAL mock run waiting for a person).
#[track_caller]
pub fn awaiting_session(home: &Path) -> PathBuf {
    eventually(
        "a session waiting for a person",
        Duration::from_secs(60),
        || {
            let project = std::fs::read_dir(home.join("projects"))
                .ok()?
                .next()?
                .ok()?;
            let session = std::fs::read_dir(project.path().join("sessions"))
                .ok()?
                .next()?
                .ok()?
                .path();
            std::fs::read_to_string(session.join("transcript.jsonl"))
                .ok()?
                .contains("\"session.awaiting\"")
                .then_some(session)
        },
    )
}

/// The one session under the crumb home `home` (its folder) and its transcript's events: for
/// tests that run one pipeline once in a scratch home.
pub fn only_session(home: &Path) -> (PathBuf, Vec<serde_json::Value>) {
    let first = |dir: PathBuf, what: &str| {
        std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{what} in {}: {e}", dir.display()))
            .next()
            .unwrap_or_else(|| panic!("no {what} in {}", dir.display()))
            .expect("entry")
            .path()
    };
    let project = first(home.join("projects"), "project");
    let dir = first(project.join("sessions"), "session");
    let text = std::fs::read_to_string(dir.join("transcript.jsonl")).expect("transcript");
    let events = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    (dir, events)
}

/// `crumb run <shipped pipeline> <pitch> --json <extra>` in a scratch project `project` with its
/// own crumb home (`project/home`), no Studio, `env` added, bounded by `limit`.
pub fn run_shipped(
    project: &Path,
    pipeline: &str,
    pitch: &str,
    extra: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> Run {
    let mut command = crumb()
        .current_dir(project)
        .env("CRUMB_HOME", project.join("home"))
        .env("CRUMB_STUDIO_PORT", "1")
        .arg("run")
        .arg(repo_root().join(pipeline))
        .arg(pitch)
        .arg("--json")
        .args(extra);
    for (key, value) in env {
        command = command.env(key, value);
    }
    command.timeout(limit).run()
}
