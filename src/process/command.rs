//! The one place crumb creates a child process. The root `clippy.toml` disallows
//! `std::process::Command::new` and `tokio::process::Command::new` everywhere else, so every child
//! starts here with the defaults a crumb child needs: stdin closed unless the caller gives it one
//! (no child may block on, or steal, the terminal's input), and for async children
//! `kill_on_drop`, so a child whose owner is dropped (a cancelled turn, a timed-out check) does
//! not outlive it. Process groups, timeouts and orphan records are the callers' to add: agent turns
//! go through [`super::run`], QA commands and Chromium through their own group guards.
#![allow(
    clippy::disallowed_methods,
    reason = "this module is where crumb's child processes are created"
)]

use std::ffi::OsStr;
use std::process::Stdio;

/// A blocking command with stdin closed (probes, the desktop opener, the mock agent's helpers).
pub(crate) fn blocking(program: impl AsRef<OsStr>) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command.stdin(Stdio::null());
    command
}

/// An async command with stdin closed and killed when its handle is dropped.
pub(crate) fn spawned(program: impl AsRef<OsStr>) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.stdin(Stdio::null()).kill_on_drop(true);
    command
}
