//! What `crumb run` and `crumb resume` show while a session runs: an `indicatif` line (current
//! role, step, elapsed, events, token budget) on a terminal, plain lines otherwise, nothing
//! with `--json` (the summary is the only output then).

use crate::fs::stdout::outln;
use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::State;
use crate::engine::state::{MOCK_ADAPTER, Swap};
use crate::pipeline::role_authority::{self, COMMON};
use crate::pipeline::table::TransitionTable;
use crate::runtime::coordinator::Observer;
use crate::transcript::{Event, Kind};

/// Progress display for one drive.
pub(super) struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    started: Instant,
    tokens_hard: u64,
    /// Swaps already announced.
    swaps_shown: usize,
    /// Each role's `produces`: the role outputs worth a line, whatever their kinds are called.
    produces: Vec<Vec<String>>,
}

impl Progress {
    /// `quiet`: show nothing but warnings (for `--json`).
    /// `table` says which kinds the roles produce (each gets a line).
    pub(super) fn new(quiet: bool, tokens_hard: u64, table: &TransitionTable) -> Self {
        let produces = table.roles.iter().map(|r| r.produces.clone()).collect();
        let tty = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let bar = (!quiet && tty).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Progress {
            plain: !quiet && bar.is_none(),
            bar,
            started: Instant::now(),
            tokens_hard,
            swaps_shown: 0,
            produces,
        }
    }

    /// Remove the progress line before the summary is printed.
    pub(super) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn budget(&self, state: &State) -> String {
        if self.tokens_hard == 0 {
            format!("{} tokens", state.budgets.tokens)
        } else {
            format!("{} / {} tokens", state.budgets.tokens, self.tokens_hard)
        }
    }
}

/// The line worth showing for an event, if any: the runner's milestones, a person's commands and
/// what the roles produce (their `produces`, not the common kinds every role may write).
fn describe(event: &Event, produces: &[Vec<String>]) -> Option<String> {
    let body = event
        .body
        .as_deref()
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("");
    let clipped: String = body.chars().take(100).collect();
    match event.kind {
        Kind::AgentWake
        | Kind::AgentStop
        | Kind::Error
        | Kind::QaResult
        | Kind::Audit
        | Kind::Ack
        | Kind::Hook
        | Kind::Done
        | Kind::SessionAwaiting => Some(format!("{} {}: {clipped}", event.from, event.kind)),
        kind if !COMMON.contains(&kind)
            && produces.iter().any(|p| role_authority::may_write(p, kind)) =>
        {
            Some(format!("{} {}: {clipped}", event.from, event.kind))
        }
        _ if event.kind.as_str().starts_with("user.") => {
            Some(format!("{} {}: {clipped}", event.from, event.kind))
        }
        _ => None,
    }
}

/// A loud line for an adapter swap: a degraded run must never look like a normal one.
fn degraded(swap: &Swap) -> String {
    let mock = if swap.to == MOCK_ADAPTER && swap.cause == "circuit_open" {
        " — the mock's artifact is a placeholder; this session cannot pass"
    } else {
        ""
    };
    format!(
        "DEGRADED {}: {} → {} ({}){mock}",
        swap.role,
        swap.from.as_deref().unwrap_or("?"),
        swap.to,
        swap.cause,
    )
}

impl Observer for Progress {
    fn event(&mut self, event: &Event, state: &State, live: bool) {
        if !live {
            self.swaps_shown = state.swaps.len();
            return;
        }
        // Every swap once, as it happens (a resumed run starts past the old ones).
        for swap in state.swaps.iter().skip(self.swaps_shown) {
            let message = degraded(swap);
            self.warn(&message);
        }
        self.swaps_shown = state.swaps.len();
        let Some(shown) = describe(event, &self.produces) else {
            return;
        };
        let elapsed = self.started.elapsed().as_secs_f32();
        if let Some(bar) = &self.bar {
            let role = state.next_role.as_deref().unwrap_or("-");
            bar.set_message(format!(
                "{role} · {shown} · {} events · {}",
                state.events,
                self.budget(state)
            ));
        } else if self.plain {
            outln!("[{elapsed:6.1}s] {shown}");
        }
    }

    fn warn(&mut self, message: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("crumb: {message}")),
            None => eprintln!("crumb: {message}"),
        }
    }
}
