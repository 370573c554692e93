//! What one `crumb mcp` server may touch: the crumb home and the project it was started for.
//! Every path a tool is given must lie inside one of them, and every action runs the `crumb`
//! binary itself on that home, so a tool does exactly what the same command line does.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::home::{CrumbHome, Project};
use crate::runtime::resolve::resolve;
use crate::runtime::session_dir::SessionDir;

/// The longest a tool that waits for its command (status, validate, export, …) lets it run.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);

/// The home and project a server serves, and the binary its tools run.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub home: CrumbHome,
    pub project: Project,
    exe: PathBuf,
}

/// What a `crumb` command a tool ran printed, and how it exited.
pub(crate) struct Finished {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Scope {
    pub(crate) fn new(home: CrumbHome, project: Project) -> Result<Scope, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find the crumb binary: {e}"))?;
        Ok(Scope { home, project, exe })
    }

    /// `path` (relative to the project) as an existing canonical path inside the project or the
    /// home; anything else is refused, symlinks out included.
    pub(crate) fn confine(&self, path: &str) -> Result<PathBuf, String> {
        let joined = self.project.root.join(path);
        let real = joined
            .canonicalize()
            .map_err(|e| format!("`{path}`: {e}"))?;
        let home = self
            .home
            .root()
            .canonicalize()
            .unwrap_or_else(|_| self.home.root().to_path_buf());
        if real.starts_with(&self.project.root) || real.starts_with(&home) {
            Ok(real)
        } else {
            Err(format!(
                "`{path}` is outside this server's project ({}) and crumb home ({}): refused",
                self.project.root.display(),
                home.display()
            ))
        }
    }

    /// A session by id (or unique prefix) in this home, or by a path inside the scope.
    pub(crate) fn session(&self, reference: &str) -> Result<SessionDir, String> {
        let reference = reference.trim();
        if reference.contains('/') || reference.starts_with('.') {
            let path = self.confine(reference)?;
            return resolve(&self.home, Some(&self.project), &path.to_string_lossy())
                .map_err(|e| e.to_string());
        }
        resolve(&self.home, Some(&self.project), reference).map_err(|e| e.to_string())
    }

    /// `crumb <args>` in the project on this home, bounded by [`COMMAND_LIMIT`].
    pub(crate) async fn crumb(&self, args: &[String]) -> Result<Finished, String> {
        let child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start crumb: {e}"))?;
        match tokio::time::timeout(COMMAND_LIMIT, child.wait_with_output()).await {
            Ok(Ok(output)) => Ok(Finished {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            }),
            Ok(Err(e)) => Err(format!("crumb failed: {e}")),
            Err(_) => Err(format!(
                "`crumb {}` did not finish within {COMMAND_LIMIT:?}",
                args.join(" ")
            )),
        }
    }

    /// Start `crumb <args>` in the background, its output in `log`; it outlives this server (a
    /// host that closes has not stopped the session) and is reaped whenever it ends.
    pub(crate) fn detach(
        &self,
        args: &[String],
        log: &Path,
    ) -> Result<tokio::sync::oneshot::Receiver<i32>, String> {
        let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut child = self
            .command(args)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0)
            .kill_on_drop(false)
            .spawn()
            .map_err(|e| format!("cannot start crumb: {e}"))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let code = child.wait().await.ok().and_then(|s| s.code()).unwrap_or(-1);
            let _ = tx.send(code);
        });
        Ok(rx)
    }

    fn command(&self, args: &[String]) -> tokio::process::Command {
        let mut command = crate::process::command::spawned(&self.exe);
        command
            .args(args)
            .current_dir(&self.project.root)
            .env("CRUMB_HOME", self.home.root())
            .env("CRUMB_NO_OPEN", "1")
            .env("NO_COLOR", "1");
        command
    }
}
