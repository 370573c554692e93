//! Exit codes of every `crumb` command, named: scripts and CI branch on them, so they are an API.
//!
//! Each code means one thing across commands; the tables of `docs/cli.md` list every code here and
//! every subcommand, and `tests/exit_codes.rs` fails when the two drift apart.
//!
//! Commands never exit themselves: a command's error carries its code by its kind
//! ([`crate::cli::error::ErrorKind::exit_code`]), an outcome that is not an error (a session that
//! ended FAILED, a batch not all passed) by [`crate::cli::error::ExitStatus`], and only
//! [`crate::cli::main`] turns either into the process exit.

use std::process::ExitCode;

/// Declares the codes and [`ALL`] together, so no code can be left out of the list `docs/cli.md`
/// is checked against.
macro_rules! exit_codes {
    ($($(#[$doc:meta])* $name:ident = $value:literal;)*) => {
        $($(#[$doc])* pub const $name: u8 = $value;)*
        /// Every code as `(name, value)`, in ascending order.
        pub const ALL: &[(&str, u8)] = &[$((stringify!($name), $name)),*];
    };
}

exit_codes! {
    /// The command did what was asked; for `run` and `resume`, the session passed or a person
    /// approved it.
    SUCCESS = 0;
    /// The command ran and the answer is no, or crumb itself failed: a blocking QA check failed
    /// (`qa`), the event on stdin is malformed or breaks the schema (`event`; nothing is written),
    /// an internal error while driving a session (`run`, `resume`), a port that cannot be bound
    /// (`studio`), a mock turn that failed (`mock-agent`), an agent the turn shim cannot start
    /// (`turn-shim`), or stdout that cannot be written.
    FAILURE = 1;
    /// The request cannot be carried out as given: arguments clap rejects, a path, session or
    /// crumb home that does not resolve, a pipeline without a `qa:` block, a transcript or
    /// pipeline `replay`/`status` cannot read, an inbox line `say` refuses, an event the firewall
    /// refuses, a missing `CRUMB_*` environment or a transcript that cannot be appended to
    /// (`event`), a non-loopback `studio --bind` without `--allow-remote`, an agent CLI a bound
    /// role needs that says it is logged out or is not on `PATH` (`run`, before any session
    /// exists).
    USAGE_ERROR = 2;
    /// The pipeline (or preset) has errors, or warnings under `--deny-warnings`: the same code
    /// from `validate`, `graph`, `qa` and `run`, so a broken pipeline is never mistaken for a
    /// usage error, a failed QA check or an internal error.
    INVALID_PIPELINE = 3;
    /// The session waits for a person (PARTIAL): `crumb say <id> /approve`, then `crumb resume`.
    AWAITING_PERSON = 10;
    /// The session ended with outcome `fail` (a declared fail, a pass refused for want of QA or
    /// resting on the mock), or a transcript's `done` recorded no outcome.
    FAILED = 20;
    /// The session ended with outcome `partial`.
    PARTIAL = 21;
    /// The session ended with outcome `rejected`.
    REJECTED = 22;
    /// The session ended with outcome `stopped`: a budget, a limit, the circuit breaker or
    /// idleness ended it before any declared outcome.
    STOPPED = 23;
    /// `batch`: not every session of the batch passed (the summary says which and why).
    BATCH_NOT_ALL_PASSED = 24;
    /// The mock builder crashed on purpose (`--mock-scenario crash-once|crash-always`); only the
    /// dispatcher sees it, and it is not an exit code a real failure of crumb produces.
    SIMULATED_CRASH = 70;
    /// Stopped by Ctrl-C or SIGTERM (128 + SIGINT); `crumb resume` continues the session.
    INTERRUPTED = 130;
}

/// The process exit status for one of the codes above.
#[must_use]
pub(crate) fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_ascending() {
        let values: Vec<u8> = ALL.iter().map(|(_, v)| *v).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    }
}
