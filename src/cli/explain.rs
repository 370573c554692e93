//! `crumb explain <code|kind>`: what a diagnostic code (or a transcript event kind) means and
//! how to fix it. Without an argument, lists every diagnostic code.

use std::fmt::Write as _;
use std::process::ExitCode;

use super::output;
use crate::exit_codes::{USAGE_ERROR, exit};
use crate::pipeline::codes::{self, Code};
use crate::pipeline::suggest;

/// Arguments of `crumb explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A diagnostic code (`crumb::unknown-role` or `unknown-role`) or an event kind (`qa.result`).
    pub name: Option<String>,
}

pub fn run(args: &Args) -> ExitCode {
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
        return output::print(&list, "explain");
    };
    let full = if name.starts_with("crumb::") {
        name.to_string()
    } else {
        format!("crumb::{name}")
    };
    if let Some(code) = codes::find(&full) {
        return output::print(explain_code(code), "explain");
    }
    if let Some(text) = crate::transcript::explain(name) {
        let authority = name
            .parse()
            .map(crate::pipeline::role_authority::describe)
            .unwrap_or_default();
        return output::print(format!("{}\n{authority}\n", text.trim_end()), "explain");
    }
    let hint = suggest::did_you_mean(&full, codes::ALL.iter().map(|c| c.name))
        .map(|h| format!(" ({h})"))
        .unwrap_or_default();
    eprintln!(
        "crumb explain: no diagnostic code or event kind named `{name}`{hint}; `crumb explain` lists the codes"
    );
    exit(USAGE_ERROR)
}

/// The text `crumb explain` prints for a code.
pub fn explain_code(code: &Code) -> String {
    format!(
        "{} ({})\n\n{}\n\nHow to fix: {}\n",
        code.name,
        code.level.as_str(),
        code.summary,
        code.fix
    )
}
