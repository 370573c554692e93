//! Shared helpers for the integration tests: run the real `crumb` binary and capture what it did.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository root (where `Cargo.toml` lives).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Path of the `crumb` binary built for these tests.
pub fn crumb_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_crumb"))
}

/// A `crumb` invocation being built, in the style of `just`'s test builder.
pub struct Crumb {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

/// Start building a `crumb` invocation run from the repository root, with a clean environment
/// for the variables crumb reads.
pub fn crumb() -> Crumb {
    let mut cmd = Command::new(crumb_bin());
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
    ] {
        cmd.env_remove(var);
    }
    // Hermetic bindings: an agent CLI installed on the developer's PATH must not be picked up.
    cmd.env("CRUMB_AMBIENT_ADAPTER", "mock");
    cmd.env("NO_COLOR", "1");
    Crumb { cmd, stdin: None }
}

impl Crumb {
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

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// Like [`Crumb::run`], but the process is killed if it is still running after `limit`.
    pub fn run_within(self, limit: std::time::Duration) -> Run {
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let pid = std::sync::Arc::new(std::sync::Mutex::new(None::<u32>));
        let watched = std::sync::Arc::clone(&pid);
        let watchdog = std::thread::spawn(move || {
            if finished.recv_timeout(limit).is_err()
                && let Some(pid) = *watched.lock().expect("pid lock")
            {
                let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid"));
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
        });
        let run = self.run_with(|child| *pid.lock().expect("pid lock") = Some(child));
        let _ = done.send(());
        watchdog.join().expect("watchdog");
        run
    }

    /// Run to completion and capture stdout, stderr and the exit code.
    pub fn run(self) -> Run {
        self.run_with(|_| {})
    }

    fn run_with(mut self, started: impl FnOnce(u32)) -> Run {
        use std::io::Write;
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = self.cmd.spawn().expect("spawn crumb");
        started(child.id());
        if let Some(input) = self.stdin.take() {
            let mut pipe = child.stdin.take().expect("stdin pipe");
            // A process may exit before reading all input; that is its answer, not a test failure.
            let _ = pipe.write_all(&input);
        }
        Run::from(child.wait_with_output().expect("wait for crumb"))
    }
}

/// What a finished `crumb` process did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
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
}
