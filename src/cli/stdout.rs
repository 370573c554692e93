//! Writing a command's output to stdout, where a closed pipe is not an error.

use std::io::Write;

use super::error::CommandError;

/// Write `text` to stdout and flush. A closed pipe (`crumb … | head`) is not an error: the reader
/// has what it wanted. Any other write failure is a [`super::error::ErrorKind::Failure`].
pub(crate) fn print(text: impl AsRef<[u8]>) -> Result<(), CommandError> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_ref())
        .and_then(|()| stdout.flush())
    {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CommandError::failure("cannot write").because(err))
        }
        _ => Ok(()),
    }
}
