//! `crumb turn-shim PROGRAM [ARGS…]` (hidden): what every agent turn runs under, so nothing the
//! agent starts outlives its turn ([`crate::process::subreaper`]). It exits with the agent's own
//! status: its code, or the signal that ended it raised again on itself (1 when it cannot start
//! it; the dispatcher has already checked the program is there).

use std::ffi::OsString;
use std::process::ExitCode;

/// Arguments of `crumb turn-shim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent's program and its arguments, run as given (never through a shell).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    argv: Vec<OsString>,
}

pub(crate) fn run(args: &Args) -> ExitCode {
    use std::os::unix::process::ExitStatusExt as _;
    match crate::process::subreaper::run_contained(&args.argv) {
        Ok(status) => {
            if let Some(signal) = status.signal() {
                // Ended by a signal: end the same way, so crumb sees what the agent did.
                let _ = signal_hook::low_level::emulate_default_handler(signal);
            }
            status
                .code()
                .and_then(|code| u8::try_from(code).ok())
                .map_or(ExitCode::FAILURE, ExitCode::from)
        }
        Err(err) => {
            eprintln!("crumb turn-shim: {err}");
            ExitCode::from(crate::exit_codes::FAILURE)
        }
    }
}
