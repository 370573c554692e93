//! `crumb lsp`: serve the Language Server Protocol on stdio for an editor (see `crate::lsp`).

use super::error::{CommandError, ExitStatus};

/// Arguments of `crumb lsp`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Accepted for editors that pass it; stdio is the only transport.
    #[arg(long)]
    pub stdio: bool,
}

pub(crate) fn run(_args: &Args) -> Result<ExitStatus, CommandError> {
    crate::lsp::serve().map_err(CommandError::failure)?;
    Ok(ExitStatus::SUCCESS)
}
