//! `crumb explain <code|kind>`: what a diagnostic code (or a transcript event kind) means and
//! how to fix it. Without an argument, lists every diagnostic code.

use super::error::{CommandError, ExitStatus};
use super::stdout;
use crate::pipeline::codes;
use crate::pipeline::suggest;
use std::fmt::Write as _;

/// Arguments of `crumb explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A diagnostic code (`crumb::unknown-role` or `unknown-role`) or an event kind (`qa.result`).
    pub name: Option<String>,
}

pub fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let Some(name) = args.name.as_deref() else {
        let list = codes::ALL.iter().fold(String::new(), |mut out, code| {
            let _ = writeln!(
                out,
                "{:<34} {:<7} {}",
                code.name,
                code.level.as_str(),
                code.summary
            );
            out
        });
        stdout::print(&list)?;
        return Ok(ExitStatus::SUCCESS);
    };
    let full = if name.starts_with("crumb::") {
        name.to_string()
    } else {
        format!("crumb::{name}")
    };
    if let Some(code) = codes::find(&full) {
        stdout::print(code.explanation())?;
        return Ok(ExitStatus::SUCCESS);
    }
    if let Some(text) = crate::transcript::explain(name) {
        let authority = name
            .parse()
            .map(crate::pipeline::role_authority::describe)
            .unwrap_or_default();
        stdout::print(format!("{}\n{authority}\n", text.trim_end()))?;
        return Ok(ExitStatus::SUCCESS);
    }
    let hint = suggest::did_you_mean(&full, codes::ALL.iter().map(|c| c.name))
        .map(|h| format!(" ({h})"))
        .unwrap_or_default();
    Err(CommandError::usage(format!(
        "no diagnostic code or event kind named `{name}`{hint}; `crumb explain` lists the codes"
    )))
}
