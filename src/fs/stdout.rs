//! Stdout as a file that may be full or closed. `println!` panics when stdout cannot be written
//! (`crumb run > /dev/full`), which would kill a run mid-session; [`outln!`] writes the same line
//! and never panics. A closed pipe (`crumb … | head`) is not an error: the reader has what it
//! wanted. Any other failure is remembered, the command goes on (a run still reaches its outcome
//! and leaves its session whole), and `cli::main` ends with exit 1 naming the cause.

use std::fmt;
use std::io::Write;
use std::sync::OnceLock;

/// The first write to stdout that failed, other than a closed pipe.
static FAILURE: OnceLock<String> = OnceLock::new();

/// Write `args` to stdout as it is (no newline added), whole, and flush.
pub(crate) fn write(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| stdout.flush());
    record(written);
}

/// Remember a failed write to stdout (the first one), unless it is a closed pipe.
pub(crate) fn record(written: std::io::Result<()>) {
    if let Err(err) = written
        && err.kind() != std::io::ErrorKind::BrokenPipe
    {
        let _ = FAILURE.set(err.to_string());
    }
}

/// Why stdout could not be written, if it could not.
pub(crate) fn failure() -> Option<&'static str> {
    FAILURE.get().map(String::as_str)
}

/// `println!` that never panics: see the module docs.
macro_rules! outln {
    () => {
        $crate::fs::stdout::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::fs::stdout::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that never panics: see the module docs.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::fs::stdout::write(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};
