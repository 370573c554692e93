//! `crumb watch` when stdout is not a terminal: plain lines for a pipe or a log — the header
//! once, each event as `crumb tail` prints it, and the outcome whenever it changes — until the
//! session ends, or until it is caught up with no coordinator left to write more.

use std::fmt::Write as _;
use std::time::Duration;

use super::model::Model;
use crate::cli::error::CommandError;

/// How long it waits before reading the transcript's tail again.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

pub(crate) fn run(model: &mut Model) -> Result<(), CommandError> {
    let mut shown_outcome = String::new();
    let mut header = false;
    loop {
        // Sampled before reading: whatever a coordinator wrote before it let go is read below.
        let live = crate::runtime::lock::is_held(model.session.path());
        let fresh = model.poll().map_err(CommandError::failure)?;
        let mut out = String::new();
        if !header {
            let _ = writeln!(out, "session {} · {}", model.session.id(), model.table.name);
            header = true;
        }
        for event in &fresh {
            out.push_str(&crate::cli::tail::human_line(event));
            out.push('\n');
        }
        let outcome = crate::cli::replay::outcome(&model.replay.state);
        if outcome != shown_outcome {
            let _ = writeln!(out, "outcome {outcome}");
            shown_outcome = outcome;
        }
        crate::cli::stdout::print(&out)?;
        if model.ended || !live {
            return Ok(());
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}
