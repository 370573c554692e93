//! The story of a run, one record per round, observed from the engine's own fold: what each
//! event did to the [`State`] and which [`Effect`]s the reducer asked for. Nothing is re-derived
//! from text, so a crash-once PASS reads differently from a clean PASS wherever the story is
//! shown (Studio, `crumb status`, the exports).
//!
//! A round begins with work (a plan or a build) after the previous round's verdict, and holds the
//! QA runs, every judge's claim and the engine's correction of it, the join, failed turns and
//! their retries, swaps, a person's words, and how it ended: the route taken after the verdict
//! (a spawn and its cause, a wait for a person) or the run's end.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::effect::{Effect, SpawnCause};
use super::state::State;
use crate::pipeline::table::TransitionTable;
use crate::transcript::{Event, Kind};

/// Rounds kept: a longer story keeps its first and its latest rounds and says how many it left out.
pub const MAX_ROUNDS: usize = 64;
/// Incidents kept per round.
const MAX_INCIDENTS: usize = 32;

/// The story of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Story {
    pub rounds: Vec<Round>,
    /// Rounds left out in the middle of a very long story.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rounds_left_out: u32,
    /// How the run ended: the outcome and the engine's reason code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ending>,
}

/// One round: work, its checks, its judgement, what came of it — in the order it happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// From 1.
    pub number: u32,
    pub steps: Vec<Step>,
    /// The route the engine took after this round's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<Next>,
}

/// One step of a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Work: `spec by planner (1 file)`, `build by builder (2 files)`.
    Produced(Produced),
    Qa(QaRun),
    /// A judge's claim beside the engine's corrected verdict.
    Judged(Judged),
    /// The join of parallel judges.
    Join(JoinResult),
    /// A failed turn, a retry, a swap, a person's line, a wait, a refusal.
    Incident(Incident),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Produced {
    pub from: String,
    pub kind: String,
    pub artifacts: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaRun {
    pub passed: bool,
    /// The checks could not run (no browser, a timeout): says nothing of the build.
    pub could_not_run: bool,
    /// Ids of the checks that failed.
    pub failed_checks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub from: String,
    pub claimed: Option<String>,
    pub claimed_aggregate: Option<f64>,
    pub verdict: String,
    pub aggregate: f64,
    pub severity: String,
    /// The guards that corrected the claim (wire names, e.g. `exec_from_qa`).
    pub corrections: Vec<String>,
    /// The dimensions the engine changed: id, claimed (absent = not sent), corrected.
    pub changed: Vec<Changed>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Changed {
    pub dimension: String,
    pub claimed: Option<f64>,
    pub corrected: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JoinResult {
    pub combine: String,
    pub verdict: String,
    pub aggregate: f64,
    pub roles: Vec<String>,
}

/// Something that happened in a round besides the work and its judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    /// `failed`, `retry`, `swap`, `person`, `waits`, `refused`, `qa_retry`.
    pub what: String,
    /// The role concerned (or `user`).
    pub role: String,
    pub detail: String,
}

/// Where the run went after a round's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Next {
    /// `spawn` (with roles and cause) or `person` (a wait).
    pub what: String,
    pub roles: Vec<String>,
    /// The spawn's cause (`route`, `veto`, `retry`, …) or what the person is asked.
    pub cause: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ending {
    pub outcome: Option<String>,
    pub reason: String,
}

/// What [`StoryFold::observe`] compares: a few counters of the state before the event.
#[derive(Debug, Clone, Copy)]
pub struct Before {
    verdicts: u32,
    swaps: usize,
    awaiting: bool,
    joined: bool,
    refused: u64,
}

impl Before {
    pub fn of(state: &State) -> Before {
        Before {
            verdicts: state.verification.count,
            swaps: state.swaps.len(),
            awaiting: state.awaiting.is_some(),
            joined: state.fan_out.as_ref().is_some_and(|f| f.joined.is_some()),
            refused: state.refused_events,
        }
    }
}

/// Builds the [`Story`] while a transcript is folded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoryFold {
    story: Story,
    /// The current round has a verdict (or a person's veto): the next work starts a new round.
    judged: bool,
}

impl StoryFold {
    pub fn new() -> StoryFold {
        StoryFold::default()
    }

    pub fn story(&self) -> &Story {
        &self.story
    }

    pub fn into_story(self) -> Story {
        self.story
    }

    /// Record what `event` did: `before` was taken just before it was folded into `state`, and
    /// `effects` are what the reducer asked for.
    pub fn observe(
        &mut self,
        table: &TransitionTable,
        event: &Event,
        before: Before,
        state: &State,
        effects: &[Effect],
    ) {
        let is_work = state.build.as_ref().is_some_and(|b| b.event_id == event.id)
            || state.plan.as_ref().is_some_and(|p| p.event_id == event.id);
        if is_work && (self.judged || self.story.rounds.is_empty()) {
            self.open_round();
        }
        if is_work {
            let artifacts = event.artifacts.len();
            self.round().steps.push(Step::Produced(Produced {
                from: event.from.clone(),
                kind: event.kind.as_str().to_owned(),
                artifacts,
            }));
        }
        match event.kind {
            Kind::QaResult => self.qa(event, state),
            Kind::Error if event.from == "system" => self.failure(event),
            Kind::UserVeto | Kind::UserApprove | Kind::UserAnswer | Kind::UserIntervene => {
                let line = event.body.clone().unwrap_or_default();
                self.incident("person", "user", format!("{} {line}", event.kind.as_str()));
                if event.kind == Kind::UserVeto {
                    self.judged = true;
                }
            }
            _ => {}
        }
        if state.verification.count > before.verdicts {
            self.verdict(table, state);
        }
        if !before.joined
            && let Some(joined) = state.fan_out.as_ref().and_then(|f| f.joined.as_ref())
        {
            self.round().steps.push(Step::Join(JoinResult {
                combine: joined.combine.clone(),
                verdict: joined.verdict.as_str().to_owned(),
                aggregate: joined.aggregate,
                roles: joined.branches.iter().map(|b| b.role.clone()).collect(),
            }));
        }
        for swap in state.swaps.iter().skip(before.swaps) {
            let detail = format!(
                "{} → {} ({})",
                swap.from.as_deref().unwrap_or("?"),
                swap.to,
                swap.cause
            );
            self.incident("swap", &swap.role, detail);
        }
        if state.refused_events > before.refused {
            self.incident(
                "refused",
                &event.from,
                format!("{} not acted on", event.kind.as_str()),
            );
        }
        if !before.awaiting
            && let Some(awaiting) = &state.awaiting
        {
            let on = awaiting.on.clone();
            self.incident("waits", "user", format!("a person is asked about {on}"));
            if self.judged && self.round().then.is_none() {
                self.round().then = Some(Next {
                    what: "person".into(),
                    roles: Vec::new(),
                    cause: on,
                });
            }
        }
        self.effects(effects);
        if let Some(done) = &state.done
            && self.story.ended.is_none()
        {
            self.story.ended = Some(Ending {
                outcome: done.outcome.map(|o| o.as_str().to_owned()),
                reason: done.reason.clone(),
            });
        }
    }

    /// The verdict just folded: the judge's claim, the engine's correction and what it changed.
    fn verdict(&mut self, table: &TransitionTable, state: &State) {
        let Some(record) = &state.verification.latest else {
            return;
        };
        let rubric = &table.scoring.rubric;
        let changed = record
            .corrected
            .dimensions
            .iter()
            .enumerate()
            .filter_map(|(i, &corrected)| {
                let claimed = record.raw.dimensions.get(i).copied().flatten();
                let differs = claimed.is_none_or(|c| (c - corrected).abs() > 1e-9);
                differs.then(|| Changed {
                    dimension: rubric
                        .get(i)
                        .map_or_else(|| format!("D{}", i + 1), |d| d.id.clone()),
                    claimed,
                    corrected,
                })
            })
            .collect();
        let judged = Judged {
            from: record.from.clone(),
            claimed: record.raw.verdict.map(|v| v.as_str().to_owned()),
            claimed_aggregate: record.raw.aggregate,
            verdict: record.corrected.verdict.as_str().to_owned(),
            aggregate: record.corrected.aggregate,
            severity: record.severity.as_str().to_owned(),
            corrections: record
                .corrections
                .iter()
                .map(|c| c.as_str().to_owned())
                .collect(),
            changed,
        };
        self.round().steps.push(Step::Judged(judged));
        self.judged = true;
    }

    fn effects(&mut self, effects: &[Effect]) {
        let spawns: Vec<_> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Spawn(s) => Some(s),
                _ => None,
            })
            .collect();
        for spawn in spawns.iter().filter(|s| s.cause == SpawnCause::Retry) {
            let detail = format!("attempt {}", spawn.attempt + 1);
            self.incident("retry", &spawn.role, detail);
        }
        let qa_retry = effects
            .iter()
            .any(|e| matches!(e, Effect::RunQa(q) if q.attempt > 0));
        if qa_retry {
            self.incident("qa_retry", "system", "QA could not run; tried again".into());
        }
        let Some(first) = spawns.first() else {
            return;
        };
        if self.judged && !self.story.rounds.is_empty() && self.round().then.is_none() {
            self.round().then = Some(Next {
                what: "spawn".into(),
                roles: spawns.iter().map(|s| s.role.clone()).collect(),
                cause: cause_name(first.cause).into(),
            });
        }
    }

    fn qa(&mut self, event: &Event, state: &State) {
        let Some(qa) = state.qa.as_ref().filter(|q| q.event_id == event.id) else {
            return;
        };
        let failed_checks = event
            .data
            .as_ref()
            .and_then(|d| d.get("checks"))
            .and_then(|c| c.as_array())
            .map(|checks| {
                checks
                    .iter()
                    .filter(|c| {
                        c.get("status")
                            .and_then(|s| s.as_str())
                            .is_some_and(|s| matches!(s, "fail" | "error" | "timeout"))
                    })
                    .filter_map(|c| c.get("id").and_then(|i| i.as_str()).map(str::to_owned))
                    .take(MAX_INCIDENTS)
                    .collect()
            })
            .unwrap_or_default();
        if self.story.rounds.is_empty() {
            self.open_round();
        }
        self.round().steps.push(Step::Qa(QaRun {
            passed: qa.passed(),
            could_not_run: qa.could_not_run,
            failed_checks,
        }));
    }

    /// The dispatcher's `error` for a failed spawn: `data: {role, reason}`.
    fn failure(&mut self, event: &Event) {
        let field = |name: &str| {
            event
                .data
                .as_ref()
                .and_then(|d| d.get(name))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        let (Some(role), Some(reason)) = (field("role"), field("reason")) else {
            return;
        };
        let detail = match field("class") {
            Some(class) => format!("{reason} ({class})"),
            None => reason,
        };
        self.incident("failed", &role, detail);
    }

    fn incident(&mut self, what: &str, role: &str, detail: String) {
        if self.story.rounds.is_empty() {
            self.open_round();
        }
        let round = self.round();
        let incidents = round
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Incident(_)))
            .count();
        if incidents < MAX_INCIDENTS {
            round.steps.push(Step::Incident(Incident {
                what: what.to_owned(),
                role: role.to_owned(),
                detail,
            }));
        }
    }

    fn open_round(&mut self) {
        let rounds = &mut self.story.rounds;
        // Past the cap, the first round stays and the oldest of the others goes.
        if rounds.len() >= MAX_ROUNDS {
            rounds.remove(1);
            self.story.rounds_left_out += 1;
        }
        let number = rounds.last().map_or(1, |r| r.number + 1);
        rounds.push(Round {
            number,
            ..Round::default()
        });
        self.judged = false;
    }

    fn round(&mut self) -> &mut Round {
        if self.story.rounds.is_empty() {
            self.open_round();
        }
        self.story
            .rounds
            .last_mut()
            .expect("a round was just opened")
    }
}

fn cause_name(cause: SpawnCause) -> &'static str {
    match cause {
        SpawnCause::Route => "route",
        SpawnCause::Goto => "goto",
        SpawnCause::Veto => "veto",
        SpawnCause::Answer => "answer",
        SpawnCause::Retry => "retry",
        SpawnCause::CircuitSwap => "circuit_swap",
        SpawnCause::Resume => "resume",
    }
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Story {
    /// One line per round, then how the run ended, for a terminal or a Markdown list.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.rounds.iter().map(Round::line).collect();
        if self.rounds_left_out > 0 && out.len() > 1 {
            out.insert(1, format!("… {} rounds left out …", self.rounds_left_out));
        }
        if let Some(end) = &self.ended {
            let outcome = end.outcome.as_deref().unwrap_or("no outcome");
            out.push(format!("ended {} ({})", outcome.to_uppercase(), end.reason));
        }
        out
    }
}

impl Round {
    /// "R2 · build by builder (2 files) · QA passed · verifier claimed PASS 29.0 → PASS 28.0
    /// (corrected by `aggregate_recomputed`: D4 5.0→4.0) · then builder (route)".
    pub fn line(&self) -> String {
        let mut parts = vec![format!("R{}", self.number)];
        parts.extend(self.steps.iter().map(Step::text));
        parts.extend(self.then.as_ref().map(Next::text));
        parts.join(" · ")
    }
}

impl Next {
    /// "then builder (route)", "then waits for a person (verdict)".
    pub fn text(&self) -> String {
        match self.what.as_str() {
            "person" => format!("then waits for a person ({})", self.cause),
            _ => format!("then {} ({})", self.roles.join(" + "), self.cause),
        }
    }
}

impl Step {
    /// The step in a few words.
    pub fn text(&self) -> String {
        match self {
            Step::Produced(p) => {
                let files = match p.artifacts {
                    0 => String::new(),
                    1 => " (1 file)".to_owned(),
                    n => format!(" ({n} files)"),
                };
                format!("{} by {}{files}", p.kind, p.from)
            }
            Step::Qa(qa) if qa.could_not_run => "QA could not run".to_owned(),
            Step::Qa(qa) if qa.passed => "QA passed".to_owned(),
            Step::Qa(qa) if qa.failed_checks.is_empty() => "QA failed".to_owned(),
            Step::Qa(qa) => format!("QA failed: {}", qa.failed_checks.join(", ")),
            Step::Judged(v) => v.text(),
            Step::Join(join) => format!(
                "join {} of {} → {} {:.1}",
                join.combine,
                join.roles.join("+"),
                join.verdict,
                join.aggregate
            ),
            Step::Incident(i) => match i.what.as_str() {
                "failed" => format!("{} failed: {}", i.role, i.detail),
                "retry" => format!("{} retried ({})", i.role, i.detail),
                "swap" => format!("{} swapped {}", i.role, i.detail),
                "person" => format!("person: {}", i.detail.trim()),
                "refused" => format!("{}: {}", i.role, i.detail),
                _ => i.detail.clone(),
            },
        }
    }
}

impl Judged {
    fn text(&self) -> String {
        let claim = match (&self.claimed, self.claimed_aggregate) {
            (Some(c), Some(a)) => format!("claimed {c} {a:.1}"),
            (Some(c), None) => format!("claimed {c}"),
            (None, Some(a)) => format!("claimed {a:.1}"),
            (None, None) => "claimed nothing".to_owned(),
        };
        let mut text = format!(
            "{} {claim} → {} {:.1}",
            self.from, self.verdict, self.aggregate
        );
        if !self.corrections.is_empty() {
            let dims: Vec<String> = self
                .changed
                .iter()
                .map(|c| match c.claimed {
                    Some(claimed) => format!("{} {claimed:.1}→{:.1}", c.dimension, c.corrected),
                    None => format!("{} absent→{:.1}", c.dimension, c.corrected),
                })
                .collect();
            let dims = if dims.is_empty() {
                String::new()
            } else {
                format!(": {}", dims.join(", "))
            };
            let _ = write!(
                text,
                " (corrected by {}{dims})",
                self.corrections.join(", ")
            );
        }
        text
    }
}
