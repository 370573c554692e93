//! `crumb watch`: the full-screen view under a real terminal (`tmux`, at 80×24 and 200×50), where
//! the `a` key approves a PARTIAL session and `q` leaves the terminal as it was, and the plain
//! lines it prints into a pipe.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{Crumb, Running, crumb, eventually};

/// A scratch project and home with one PARTIAL mock session waiting for a person.
struct Waiting {
    root: tempfile::TempDir,
    folder: PathBuf,
    run: Running,
}

impl Waiting {
    fn start() -> Waiting {
        let root = tempfile::tempdir().expect("tempdir");
        let project = root.path().join("project");
        crate::support::casual_static_project(&project);
        let run = crumb()
            .current_dir(&project)
            .env("CRUMB_HOME", root.path().join("home"))
            .args(["run", "pipelines/casual-static.yaml", "a puzzle game"])
            .args(["--adapter", "mock", "--mock-scenario", "partial", "--wait"])
            .spawn();
        let folder = crate::support::awaiting_session(&root.path().join("home"));
        Waiting { root, folder, run }
    }

    /// The shell command a tmux pane runs: `crumb watch` on the session (bounded), then a line
    /// with its exit code, then a pause that keeps the pane open to be read.
    fn watch_command(&self) -> String {
        let quote = |path: &Path| shell_words::quote(&path.display().to_string()).into_owned();
        format!(
            "cd {} && CRUMB_HOME={} timeout --foreground 120 {} watch {}; echo watch-exited-$?; sleep 60",
            quote(&self.root.path().join("project")),
            quote(&self.root.path().join("home")),
            quote(&crate::support::crumb_bin()),
            quote(&self.folder),
        )
    }
}

/// A tmux server of its own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(width: u16, height: u16, command: &str) -> Tmux {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmux = Tmux {
            socket: format!("crumb-watch-{}-{n}", std::process::id()),
        };
        tmux.run(&format!(
            "new-session -d -s watch -x {width} -y {height} {}",
            shell_words::quote(command)
        ));
        tmux
    }

    fn run(&self, args: &str) -> String {
        Crumb::shell(&format!("tmux -L {} {args}", self.socket))
            .timeout(Duration::from_secs(20))
            .run()
            .expect_code(0)
            .stdout
    }

    /// The screen once it shows `text`.
    #[track_caller]
    fn screen_with(&self, text: &str) -> String {
        eventually(
            &format!("the screen to show `{text}`"),
            Duration::from_secs(60),
            || {
                let screen = self.run("capture-pane -p -t watch");
                screen.contains(text).then_some(screen)
            },
        )
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Crumb::shell(&format!("tmux -L {} kill-server", self.socket))
            .timeout(Duration::from_secs(20))
            .run();
    }
}

/// `crumb watch` in a `width`×`height` terminal: the screen before and after `a`, and the
/// terminal after `q`.
fn approve_in_a_terminal(width: u16, height: u16) {
    let waiting = Waiting::start();
    let command = waiting.watch_command();
    let tmux = Tmux::start(width, height, &command);
    let before = tmux.screen_with("awaiting a person");
    for shown in [
        "casual-static",
        "session.awaiting",
        "scorecard",
        "verdict PARTIAL",
        "a approve",
    ] {
        assert!(
            before.contains(shown),
            "`{shown}` missing before:\n{before}"
        );
    }
    assert!(before.lines().count() <= usize::from(height), "{before}");
    assert!(
        before
            .lines()
            .all(|l| l.chars().count() <= usize::from(width)),
        "{before}"
    );

    tmux.run("send-keys -t watch a");
    let after = tmux.screen_with("done — approved (outcome pass)");
    for shown in [
        "user.approve",
        "session.end",
        "sent: /approve",
        "rounds  PARTIAL",
    ] {
        assert!(after.contains(shown), "`{shown}` missing after:\n{after}");
    }
    waiting.run.wait().expect_code(0);

    tmux.run("send-keys -t watch q");
    let left = tmux.screen_with("watch-exited-0");
    assert!(
        !left.contains("scorecard"),
        "the alternate screen is gone:\n{left}"
    );
}

#[test]
fn the_a_key_approves_a_partial_session_at_80_by_24() {
    approve_in_a_terminal(80, 24);
}

#[test]
fn the_a_key_approves_a_partial_session_at_200_by_50() {
    approve_in_a_terminal(200, 50);
}

/// Into a pipe, `crumb watch` prints plain lines: the header, each event as `crumb tail` prints
/// it and the outcome as it changes, and ends with the session.
#[test]
fn into_a_pipe_it_prints_plain_lines_until_the_session_ends() {
    let waiting = Waiting::start();
    let watch = crumb()
        .current_dir(waiting.root.path().join("project"))
        .env("CRUMB_HOME", waiting.root.path().join("home"))
        .arg("watch")
        .arg(&waiting.folder);
    let (watching, lines) = watch.spawn_lines();
    let first = lines
        .recv_timeout(Duration::from_secs(60))
        .expect("a header");
    assert!(
        first.starts_with("session ") && first.ends_with("· casual-static"),
        "{first}"
    );
    crumb()
        .current_dir(waiting.root.path().join("project"))
        .env("CRUMB_HOME", waiting.root.path().join("home"))
        .args(["say", path(&waiting.folder), "/approve"])
        .run()
        .expect_code(0);
    let out = watching.wait().expect_code(0).stdout;
    waiting.run.wait().expect_code(0);
    assert!(
        !out.contains('\u{1b}'),
        "no escape sequences in a pipe:\n{out}"
    );
    for shown in [
        "outcome awaiting a person (/approve or /veto)",
        "user.approve",
        "outcome done — approved (outcome pass)",
    ] {
        assert!(out.contains(shown), "`{shown}` missing:\n{out}");
    }
    let last_event = out
        .lines()
        .rev()
        .find(|l| !l.starts_with("outcome"))
        .unwrap_or_default();
    assert!(last_event.contains("session.end"), "{out}");
}

fn path(folder: &Path) -> &str {
    folder.to_str().expect("utf-8 path")
}

/// The other keys: `v` vetoes with the typed reason, `:` sends a line (a refused one says why),
/// `s` stops the coordinator and `r` resumes it in the background.
#[test]
fn veto_with_a_reason_a_refused_line_stop_and_resume_from_the_keys() {
    let waiting = Waiting::start();
    let home = waiting.root.path().join("home");
    let command = waiting.watch_command();
    let tmux = Tmux::start(80, 24, &command);
    tmux.screen_with("awaiting a person");
    tmux.run("send-keys -t watch v");
    tmux.screen_with("veto, because:");
    tmux.run("send-keys -t watch -l 'too easy'");
    tmux.run("send-keys -t watch Enter");
    tmux.screen_with("sent: /veto too easy");
    let transcript = waiting.folder.join("transcript.jsonl");
    eventually(
        "a second wait for a person",
        Duration::from_secs(60),
        || {
            let text = std::fs::read_to_string(&transcript).ok()?;
            (text.contains("\"user.veto\"")
                && text.contains("too easy")
                && text.matches("\"session.awaiting\"").count() == 2)
                .then_some(())
        },
    );

    tmux.run("send-keys -t watch :");
    tmux.run("send-keys -t watch -l '/frobnicate'");
    tmux.run("send-keys -t watch Enter");
    let refused = tmux.screen_with("refused:");
    assert!(refused.contains("frobnicate"), "{refused}");

    tmux.run("send-keys -t watch s");
    tmux.screen_with("stopping the coordinator");
    let first_pid = u64::from(waiting.run.id());
    let stopped = waiting.run.wait();
    assert_ne!(stopped.code, 0, "the stopped run does not end as a pass");

    tmux.run("send-keys -t watch r");
    tmux.screen_with("resuming (pid");
    let meta = waiting.folder.join("meta.json");
    eventually("the resumed coordinator", Duration::from_secs(60), || {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&meta).ok()?).ok()?;
        let pid = meta["pid"].as_u64()?;
        (pid != first_pid).then_some(())
    });
    crumb()
        .env("CRUMB_HOME", &home)
        .args(["say", path(&waiting.folder), "/approve"])
        .run()
        .expect_code(0);
    tmux.screen_with("done — approved (outcome pass)");
}

/// `crumb run … --watch` runs in the background and shows the view at once; approving from it
/// ends the run, and the command exits with the run's code.
#[test]
fn run_with_watch_shows_the_session_and_exits_with_the_runs_code() {
    let root = tempfile::tempdir().expect("tempdir");
    let project = root.path().join("project");
    crate::support::casual_static_project(&project);
    let command = format!(
        "cd {} && CRUMB_HOME={} CRUMB_STUDIO_PORT=1 timeout --foreground 120 {} run pipelines/casual-static.yaml 'a puzzle game' --adapter mock --mock-scenario partial --watch; echo watch-exited-$?; sleep 60",
        shell_words::quote(&project.display().to_string()),
        shell_words::quote(&root.path().join("home").display().to_string()),
        shell_words::quote(&crate::support::crumb_bin().display().to_string()),
    );
    let tmux = Tmux::start(80, 24, &command);
    tmux.screen_with("awaiting a person");
    tmux.run("send-keys -t watch a");
    tmux.screen_with("done — approved (outcome pass)");
    tmux.run("send-keys -t watch q");
    tmux.screen_with("watch-exited-0");
}
