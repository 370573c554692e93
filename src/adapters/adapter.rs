//! The adapter seam: every fact crumb knows about one agent CLI (or the mock, or the `command`
//! adapter) is a method of `Adapter`, so the dispatcher, the failure classifier, `crumb
//! doctor` and ambient detection ask the adapter instead of matching on its name.
//!
//! Modelled on vector's `SourceConfig` and jj's `Backend`: an object-safe trait, one `'static`
//! value per adapter, listed once in [`super::registry`].

use std::ffi::OsString;

use serde::Serialize;

use super::diagnosis::FailureClass;
use super::turn::{Invocation, InvocationError, StreamParser, TurnRequest};

/// One way of running a role's turn.
pub(crate) trait Adapter: Send + Sync {
    /// The spelling in flags, presets, config files, pipelines, `/swap` lines and events.
    fn name(&self) -> &'static str;

    /// The executable an agent CLI runs; `None` for adapters that are not an agent CLI (they
    /// are never probed by `crumb doctor` nor detected on `PATH`).
    fn binary(&self) -> Option<&'static str> {
        None
    }

    /// The model provider recorded in events when a binding does not name one.
    fn default_provider(&self) -> &'static str {
        "none"
    }

    /// How to start the process for `request`: argv, environment, stdin, files, and the notes on
    /// what the adapter had to change (an effort level, a base URL).
    fn invocation(&self, request: &TurnRequest) -> Result<Invocation, InvocationError>;

    /// A fresh parser for the process's stdout (usage, terminal event, tool calls, problems).
    fn parser(&self) -> Box<dyn StreamParser>;

    /// Whether the binding supplies the program to run (the `command` adapter's argv template),
    /// so binding resolution must find an argv for it.
    fn runs_argv(&self) -> bool {
        false
    }

    /// What one of the CLI's documented exit codes means, for the one-line turn verdict.
    fn exit_meaning(&self, _code: i32) -> Option<&'static str> {
        None
    }

    /// The failure class one of the CLI's documented exit codes implies.
    fn exit_class(&self, _code: i32) -> Option<FailureClass> {
        None
    }

    /// The fix for a turn the CLI failed for want of a login or a key.
    fn auth_hint(&self) -> Option<&'static str> {
        None
    }

    /// How to install the CLI when it is not on `PATH`.
    fn install_hint(&self) -> Option<&'static str> {
        None
    }

    /// What to do when the CLI is installed but cannot call its model.
    fn login_hint(&self) -> Option<&'static str> {
        None
    }

    /// How `crumb doctor` tells whether the CLI can call its model (credentials in `env` first,
    /// what the CLI itself uses before anything stored). Credential files are never read.
    fn login_check(&self, _env: &dyn VarSource) -> LoginCheck {
        LoginCheck::Known(Login::Yes, "needs no login".to_owned())
    }

    /// Inherited variables the CLI must not see: set when crumb itself runs inside this CLI,
    /// they would trip its nesting guard (removed from turns and from doctor's probes).
    fn nesting_guards(&self) -> &'static [&'static str] {
        &[]
    }

    /// The arguments that make the CLI print its version.
    fn version_args(&self) -> &'static [&'static str] {
        &["--version"]
    }

    /// Variables that say crumb was launched from inside this CLI (ambient detection).
    fn ambient_markers(&self) -> &'static [&'static str] {
        &[]
    }
}

/// The environment an adapter's checks may read: a snapshot, so that doctor and tests decide
/// exactly what is visible.
pub(crate) trait VarSource {
    /// A set, non-empty variable.
    fn var(&self, name: &str) -> Option<&OsString>;
}

/// Whether a CLI can call its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Login {
    Yes,
    No,
    /// The CLI has no way to tell without spending a request.
    Unknown,
}

/// How an adapter's login is found out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoginCheck {
    /// Decided from the environment (or the CLI's settings), with the reason.
    Known(Login, String),
    /// Ask the CLI's own status command (these arguments): exit 0 logged in, 1 logged out.
    StatusCommand(&'static [&'static str]),
}

/// A login found from the first of `names` set in `env`, if any.
pub(crate) fn credential_set(env: &dyn VarSource, names: &[&'static str]) -> Option<LoginCheck> {
    names
        .iter()
        .find(|name| env.var(name).is_some())
        .map(|name| LoginCheck::Known(Login::Yes, format!("{name} is set")))
}
