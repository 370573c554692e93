//! `crumb why`: the reasons a session ended or stalls, read off the fold itself — the terminal
//! the reducer set and the route that fired on the event that set it, or the wait it is in and
//! the commands the table accepts there — plus what shaped the way there: each guard correction
//! (claimed → corrected), each budget against its limit, each failed turn with its class and
//! hint, swaps, and the QA checks that failed with their output tails. Nothing here reads text
//! for meaning: every cause is a field the engine or the runner wrote.

use serde::Serialize;
use serde_json::Value;

use super::state::{State, Swap};
use crate::pipeline::graph::route_label;
use crate::pipeline::table::{Action, CompiledRoute, TransitionTable};
use crate::pipeline::triggers::QA_ERROR_TRIGGER;
use crate::transcript::payload::data_str;
use crate::transcript::{Event, Kind};

/// Longest QA output tail kept per failed check (characters).
const TAIL_CHARS: usize = 600;
/// Most entries kept per list (the earliest explain the most).
const MAX_ENTRIES: usize = 64;

/// Everything `crumb why` says about one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Why {
    /// One line: the cause (what `crumb status` ends with and Studio's banner shows).
    pub headline: String,
    /// `session.start` marked the session a dry run: the route, not a result of the work.
    pub dry_run: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    /// Roles whose turn is running (a session neither ended nor waiting).
    pub running: Vec<String>,
    pub corrections: Vec<Corrected>,
    pub budgets: Vec<BudgetUse>,
    pub failed_turns: Vec<FailedTurn>,
    pub swaps: Vec<Swap>,
    pub qa_failures: Vec<QaFailure>,
}

/// How the session ended, as the reducer recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ended {
    /// `pass`, `fail`, `partial`, `rejected`, `stopped` (absent only for a foreign `done`).
    pub outcome: Option<String>,
    /// The engine's reason (`verdict_pass`, `token_exhausted`, `circuit_open:builder`, …).
    pub reason: String,
    pub event_id: String,
    /// The route that fired on that event, numbered from 1 as everywhere (`None` when a budget
    /// or breaker stopped the session outside any route).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteRef>,
}

/// One route of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteRef {
    pub number: usize,
    /// `verdict PASS → done pass (verdict_pass)`.
    pub label: String,
}

/// The wait a session is in and what a person can say to move it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiting {
    /// `verdict`, `qa.error`, or the kind whose route awaits.
    pub on: String,
    pub event_id: String,
    /// The commands the table answers here (`/approve`, `/veto <reason>`, …).
    pub say: Vec<String>,
}

/// One `judge.score` the guards corrected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Corrected {
    pub event_id: String,
    /// The guards' wire names (`exec_from_qa`, `pass_requires_qa`, …).
    pub corrections: Vec<String>,
    pub claimed_aggregate: Option<f64>,
    pub aggregate: f64,
    pub claimed_verdict: Option<String>,
    pub verdict: String,
}

/// One budget and how close the session came to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetUse {
    /// `tokens`, `max_verify`, `max_respec`, `wall_clock_ms`, `route #n`.
    pub name: String,
    pub used: u64,
    pub limit: u64,
}

/// One failed turn, as the runner classified it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedTurn {
    pub event_id: String,
    pub role: String,
    /// `data.reason`: `exit_nonzero`, `idle_timeout`, `timeout`, `no_produces`, …
    pub reason: String,
    /// `data.class` (the adapter's failure class), when the runner gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// One QA check that failed, with the end of what it printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QaFailure {
    pub event_id: String,
    pub check: String,
    pub findings: Vec<String>,
    pub tail: String,
}

/// Fold `events` through `table` and explain where the fold ended.
pub fn explain<'a>(table: &TransitionTable, events: impl IntoIterator<Item = &'a Event>) -> Why {
    let mut state = State::new();
    let mut why = Collected::default();
    for event in events {
        let before = state.verification.count;
        let mut fired = Vec::new();
        let was_done = state.done.is_some();
        state.apply_traced(table, event, Some(&mut fired));
        if !was_done && state.done.is_some() {
            why.ending_routes = fired;
        }
        why.observe(&state, event, before);
    }
    why.finish(table, &state)
}

/// What the fold showed on its way.
#[derive(Default)]
struct Collected {
    dry_run: bool,
    ending_routes: Vec<usize>,
    corrections: Vec<Corrected>,
    failed_turns: Vec<FailedTurn>,
    qa_failures: Vec<QaFailure>,
}

impl Collected {
    fn observe(&mut self, state: &State, event: &Event, verifications_before: u32) {
        match event.kind {
            Kind::SessionStart => {
                self.dry_run |= event
                    .data
                    .as_ref()
                    .and_then(|d| d.get("dry_run"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
            }
            Kind::JudgeScore if state.verification.count > verifications_before => {
                if let Some(record) = &state.verification.latest
                    && !record.corrections.is_empty()
                    && self.corrections.len() < MAX_ENTRIES
                {
                    self.corrections.push(Corrected {
                        event_id: record.event_id.clone(),
                        corrections: record
                            .corrections
                            .iter()
                            .map(|c| c.as_str().to_owned())
                            .collect(),
                        claimed_aggregate: record.raw.aggregate,
                        aggregate: record.corrected.aggregate,
                        claimed_verdict: record.raw.verdict.map(|v| v.as_str().to_owned()),
                        verdict: record.corrected.verdict.as_str().to_owned(),
                    });
                }
            }
            Kind::Error if self.failed_turns.len() < MAX_ENTRIES => {
                if let Some(role) = data_str(event, "role") {
                    self.failed_turns.push(FailedTurn {
                        event_id: event.id.clone(),
                        role: role.to_owned(),
                        reason: data_str(event, "reason").unwrap_or("error").to_owned(),
                        class: data_str(event, "class").map(str::to_owned),
                        hint: data_str(event, "hint").map(str::to_owned),
                    });
                }
            }
            Kind::QaResult => self.qa_failures_of(event),
            _ => {}
        }
    }

    fn qa_failures_of(&mut self, event: &Event) {
        let checks = event
            .data
            .as_ref()
            .and_then(|d| d.get("checks"))
            .and_then(Value::as_array);
        for check in checks.into_iter().flatten() {
            if check.get("status").and_then(Value::as_str) != Some("fail")
                || self.qa_failures.len() >= MAX_ENTRIES
            {
                continue;
            }
            let text = |key: &str| {
                check
                    .get("details")
                    .and_then(|d| d.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            let output = format!("{}{}", text("stdout"), text("stderr"));
            let skip = output.chars().count().saturating_sub(TAIL_CHARS);
            self.qa_failures.push(QaFailure {
                event_id: event.id.clone(),
                check: check
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
                findings: check
                    .get("findings")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.get("message").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect(),
                tail: output.chars().skip(skip).collect(),
            });
        }
    }

    fn finish(self, table: &TransitionTable, state: &State) -> Why {
        let ended = state.done.as_ref().map(|done| Ended {
            outcome: done.outcome.map(|o| o.as_str().to_owned()),
            reason: done.reason.clone(),
            event_id: done.event_id.clone(),
            route: self
                .ending_routes
                .last()
                .and_then(|&i| table.routes.get(i))
                .map(route_ref),
        });
        let waiting = state.awaiting.as_ref().map(|awaiting| Waiting {
            on: awaiting.on.clone(),
            event_id: awaiting.judge_event_id.clone(),
            say: person_moves(table, &awaiting.on),
        });
        Why {
            headline: headline(table, state, self.dry_run),
            dry_run: self.dry_run,
            ended,
            waiting,
            running: running(state).map(str::to_owned).collect(),
            corrections: self.corrections,
            budgets: budgets(table, state),
            failed_turns: self.failed_turns,
            swaps: state.swaps.clone(),
            qa_failures: self.qa_failures,
        }
    }
}

fn route_ref(route: &CompiledRoute) -> RouteRef {
    let action = match &route.action {
        Action::Spawn { role } => format!("spawn {role}"),
        Action::SpawnAll { roles } => format!("spawn {}", roles.join(", ")),
        Action::Join { .. } => "join".to_owned(),
        Action::RunQa => "run qa".to_owned(),
        Action::Done { outcome, reason } => format!("done {} ({reason})", outcome.as_str()),
        Action::AwaitHuman => "await a person".to_owned(),
    };
    let number = route.index + 1;
    let label = route_label(route);
    let trigger = label.strip_prefix(&format!("#{number} ")).unwrap_or(&label);
    RouteRef {
        number,
        label: format!("{trigger} → {action}"),
    }
}

/// What the engine's person commands accept while the session awaits `on`.
fn person_moves(table: &TransitionTable, on: &str) -> Vec<String> {
    if on == QA_ERROR_TRIGGER {
        return vec!["/redo (run QA again)".to_owned()];
    }
    let routed = |kind: Kind| table.route_for(kind.as_str(), "user").is_some();
    let mut say = Vec::new();
    if on == "verdict" && routed(Kind::UserApprove) {
        say.push("/approve".to_owned());
    }
    if routed(Kind::UserVeto) {
        say.push("/veto <reason>".to_owned());
    }
    if routed(Kind::UserAnswer) {
        say.push("/answer <text>".to_owned());
    }
    say
}

fn budgets(table: &TransitionTable, state: &State) -> Vec<BudgetUse> {
    let limits = &table.limits;
    let mut out = vec![
        BudgetUse {
            name: "tokens".into(),
            used: state.budgets.tokens,
            limit: limits.tokens_hard,
        },
        BudgetUse {
            name: "max_verify".into(),
            used: state.verification.count.into(),
            limit: limits.max_verify.into(),
        },
        BudgetUse {
            name: "max_respec".into(),
            used: state.budgets.respecs.into(),
            limit: limits.max_respec.into(),
        },
        BudgetUse {
            name: "wall_clock_ms".into(),
            used: state.clock.elapsed_ms(),
            limit: limits.wall_clock_hard_ms,
        },
    ];
    for route in &table.routes {
        if let Some(max) = route.max {
            out.push(BudgetUse {
                name: format!("route #{}", route.index + 1),
                used: state
                    .route_fires
                    .get(&route.index)
                    .copied()
                    .unwrap_or(0)
                    .into(),
                limit: max.into(),
            });
        }
    }
    out
}

/// The first line of [`Why`] from the fold alone (no history): what `crumb status` and Studio's
/// banner show without folding the transcript again. `dry_run` is `session.start`'s mark.
pub fn headline(table: &TransitionTable, state: &State, dry_run: bool) -> String {
    let prefix = if dry_run { "DRY RUN: " } else { "" };
    if let Some(done) = &state.done {
        let outcome = done.outcome.map_or("ended", |o| o.as_str());
        let tail = if dry_run {
            "; this is the route, not a result of the work"
        } else {
            ""
        };
        return format!("{prefix}{outcome} ({}){tail}", done.reason);
    }
    if let Some(awaiting) = &state.awaiting {
        let say = person_moves(table, &awaiting.on);
        let say = if say.is_empty() {
            "nothing the pipeline routes".to_owned()
        } else {
            say.join(" or ")
        };
        return format!(
            "{prefix}waiting for a person on `{}` (event {}): say {say}",
            awaiting.on, awaiting.judge_event_id
        );
    }
    let running: Vec<&str> = running(state).collect();
    if !running.is_empty() {
        return format!("{prefix}running: {}", running.join(", "));
    }
    if state.paused {
        return format!("{prefix}paused: `/resume` releases the queued spawns");
    }
    format!(
        "{prefix}idle after {} event(s): no turn runs, nothing is awaited",
        state.events
    )
}

/// Roles whose turn is open.
fn running(state: &State) -> impl Iterator<Item = &str> {
    state
        .roles
        .iter()
        .filter(|(_, r)| r.open_turn.is_some())
        .map(|(id, _)| id.as_str())
}
