//! `crumb run … --watch`: the same `crumb run` (with `--wait`, so a person can answer from the
//! view) in the background, and `crumb watch` on the session it starts. Quitting the view leaves
//! the run going; once the run has ended, the command exits with the run's code.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::model::Model;
use crate::cli::error::{CommandError, ExitStatus};
use crate::home::{CrumbHome, Project};
use crate::runtime::listing;
use crate::runtime::session_dir::SessionDir;

/// How long the new session's folder may take to appear.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long an ended run may take to exit.
const EXIT_LIMIT: Duration = Duration::from_secs(10);
/// How often the home (or the run) is looked at.
const START_POLL: Duration = Duration::from_millis(50);

pub(crate) fn run_and_watch(home: &CrumbHome) -> Result<ExitStatus, CommandError> {
    let project = Project::current().map_err(|e| {
        CommandError::usage("cannot determine the project of the working directory").because(e)
    })?;
    let before = listing::ids(home, &project);
    let log_dir = home.root().join("watch");
    std::fs::create_dir_all(&log_dir).map_err(CommandError::failure_from)?;
    let log_path = log_dir.join(format!("run-{}.log", ulid::Ulid::new()));
    let log = std::fs::File::create(&log_path).map_err(CommandError::failure_from)?;
    let err = log.try_clone().map_err(CommandError::failure_from)?;
    // The same arguments, less `--watch`, plus `--wait`.
    let args: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|a| a != "--watch")
        .collect();
    let exe = std::env::current_exe().map_err(CommandError::failure_from)?;
    let mut command = crate::process::command::blocking(exe);
    command
        .args(&args)
        .arg("--wait")
        .env("CRUMB_HOME", home.root())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err));
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(CommandError::failure_from)?;
    let session = wait_for_session(home, &project, &before, &mut child).ok_or_else(|| {
        let said = std::fs::read_to_string(&log_path).unwrap_or_default();
        CommandError::usage(format!("the run did not start a session: {}", said.trim()))
    })?;
    let id = session.id().to_owned();
    let mut model = Model::open(session).map_err(CommandError::usage)?;
    super::show(&mut model)?;
    // A run that has written `session.end` is about to exit: its code is the command's.
    let settle = Instant::now()
        + if model.ended {
            EXIT_LIMIT
        } else {
            Duration::ZERO
        };
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < settle {
        std::thread::sleep(START_POLL);
    }
    if let Ok(Some(status)) = child.try_wait() {
        let code = status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1);
        return Ok(ExitStatus::outcome(code));
    }
    eprintln!("crumb run: the session goes on in the background: `crumb watch {id}`");
    Ok(ExitStatus::SUCCESS)
}

/// The new session once its folder exists, or `None` when the run exits first or takes too long.
fn wait_for_session(
    home: &CrumbHome,
    project: &Project,
    before: &std::collections::HashSet<String>,
    child: &mut Child,
) -> Option<SessionDir> {
    let deadline = Instant::now() + START_LIMIT;
    loop {
        if let Some(new) = listing::new_since(home, project, before) {
            return SessionDir::open(new.path).ok();
        }
        if Instant::now() >= deadline || !matches!(child.try_wait(), Ok(None)) {
            return None;
        }
        std::thread::sleep(START_POLL);
    }
}
