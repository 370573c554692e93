//! The world a pipeline runs in, reduced to the choices that decide its route: which of its
//! `produces` kinds a role writes, a judge's verdict × severity, whether a turn fails, whether QA
//! passes, fails or cannot run, and what a person answers when asked.
//!
//! Every choice becomes a real transcript event folded by the real reducer ([`State::apply`]), and
//! the effects it returns are carried out the way the runtime does: a spawn or a QA run becomes
//! pending work, an engine-composed event is folded straight back. So `crumb check` and
//! `crumb run --dry-run` follow the engine's own semantics; nothing here re-implements routing.
//! A new kind of effect needs one case in `World::carry_out`.

use serde_json::{Map, Value, json};

use crate::engine::effect::Effect;
use crate::engine::state::State;
use crate::pipeline::rubric::DimensionSource;
use crate::pipeline::table::TransitionTable;
use crate::transcript::{Deviation, Dimension, Draft, Event, Kind, ScoreSource, Scores};
use crate::vocab::{Severity, Verdict};

/// Every event the explorer folds carries this time, so no wall-clock budget ever fires (time is
/// not a choice the pipeline makes).
const TS: &str = "2026-01-01T00:00:00.000Z";
/// The session id of explored events.
const SESSION: &str = "explore";
/// The most events one step may fold (engine-composed events included) before it is cut off: a
/// pipeline that routes engine events into each other must not hang the explorer.
const MAX_FOLDS_PER_STEP: usize = 64;

/// Work the engine asked for that has not reported back yet.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Work {
    /// A turn of this role.
    Turn(String),
    /// A QA run.
    Qa,
}

/// What the world answers to one piece of work, or what a person says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The role's turn writes this kind (one of its `produces`).
    Writes { role: String, kind: Kind },
    /// The role's turn writes `judge.score` with this verdict claimed and this severity.
    Judges {
        role: String,
        verdict: Verdict,
        severity: Severity,
    },
    /// The role's turn fails (the dispatcher's `error`: a crash, a timeout, no `produces`).
    Fails { role: String },
    /// QA ran: the blocking checks passed or not.
    Qa { passed: bool },
    /// QA could not run (no browser, a launch timeout): `qa.result` with status `error`.
    QaCouldNotRun,
    /// A person's `/approve`.
    Approve,
    /// A person's `/veto <reason>`.
    Veto,
    /// A person's `/answer <text>` (only where the pipeline routes `user.answer`).
    Answer,
    /// A person's `/redo` (QA again after it could not run).
    Redo,
}

impl Choice {
    /// Whether a person made this choice (a loop through one is a person's, not the engine's).
    pub(crate) fn by_person(&self) -> bool {
        matches!(
            self,
            Choice::Approve | Choice::Veto | Choice::Answer | Choice::Redo
        )
    }

    /// The role whose turn this choice ends, if any.
    pub(crate) fn turn_of(&self) -> Option<&str> {
        match self {
            Choice::Writes { role, .. } | Choice::Judges { role, .. } | Choice::Fails { role } => {
                Some(role)
            }
            _ => None,
        }
    }

    /// The work item this choice answers.
    pub fn answers(&self) -> Option<Work> {
        match self {
            Choice::Qa { .. } | Choice::QaCouldNotRun => Some(Work::Qa),
            other => other.turn_of().map(|role| Work::Turn(role.to_owned())),
        }
    }

    /// [`Choice::describe`], told with the state after the step: a judge's claim that the guards
    /// corrected says what the routes saw (`judges PASS × Important, corrected to FAIL`).
    pub(crate) fn describe_in(&self, after: &State) -> String {
        let text = self.describe();
        match (self, after.verification.latest.as_ref()) {
            (Choice::Judges { verdict, .. }, Some(latest))
                if latest.corrected.verdict != *verdict =>
            {
                format!("{text}, corrected to {}", latest.corrected.verdict)
            }
            _ => text,
        }
    }

    /// One line for a path: who did what.
    pub fn describe(&self) -> String {
        match self {
            Choice::Writes { role, kind } => format!("{role} writes {}", kind.as_str()),
            Choice::Judges {
                role,
                verdict,
                severity,
            } => format!("{role} judges {verdict} × {severity}"),
            Choice::Fails { role } => format!("{role}'s turn fails"),
            Choice::Qa { passed: true } => "QA passes".to_owned(),
            Choice::Qa { passed: false } => "QA fails".to_owned(),
            Choice::QaCouldNotRun => "QA could not run".to_owned(),
            Choice::Approve => "person: /approve".to_owned(),
            Choice::Veto => "person: /veto".to_owned(),
            Choice::Answer => "person: /answer".to_owned(),
            Choice::Redo => "person: /redo".to_owned(),
        }
    }
}

/// A point of a run: the folded state and the work still out.
#[derive(Debug, Clone)]
pub struct Point {
    pub state: State,
    /// Pending work, kept sorted so two points that differ only in order are one.
    pub pending: Vec<Work>,
}

/// The table and the rules of the world around it.
pub struct World<'a> {
    pub table: &'a TransitionTable,
    /// Whether a turn may fail (explores the retries and the circuit breaker).
    pub failures: bool,
    /// Indices of the routes fired since the caller last took them ([`World::take_fired`]).
    fired: std::cell::RefCell<Vec<usize>>,
    /// The severities a judge's choices cover: all three, or only `Important` when no route
    /// tells them apart (severity is read only to pick a verdict's route, so the other two
    /// would lead to the same states under other names).
    pub(crate) severities: Vec<Severity>,
}

impl<'a> World<'a> {
    pub fn new(table: &'a TransitionTable) -> Self {
        let alike = table
            .verdict_matrix
            .iter()
            .all(|row| row.iter().all(|route| *route == row[0]));
        World {
            table,
            failures: true,
            fired: std::cell::RefCell::new(Vec::new()),
            severities: if alike {
                vec![Severity::Important]
            } else {
                Severity::ALL.to_vec()
            },
        }
    }

    /// The routes fired by the steps since the last call, in order (repeats kept).
    pub(crate) fn take_fired(&self) -> Vec<usize> {
        std::mem::take(&mut *self.fired.borrow_mut())
    }

    /// The session right after `crumb run` wrote `session.start` (with `start_data`) and the goal.
    pub fn start(&self, goal: &str, start_data: Map<String, Value>) -> (Point, Vec<Effect>) {
        let mut point = Point {
            state: State::new(),
            pending: Vec::new(),
        };
        let mut effects = self.fold(
            &mut point,
            Draft::new("system", Kind::SessionStart).data(start_data),
        );
        effects.extend(self.fold(&mut point, Draft::new("user", Kind::Goal).body(goal)));
        (point, effects)
    }

    /// Every choice the world may make at `point`, in a fixed order.
    pub(crate) fn choices(&self, point: &Point) -> Vec<Choice> {
        let mut choices = Vec::new();
        if point.state.done.is_some() {
            return choices;
        }
        let mut seen: Vec<&Work> = Vec::new();
        for work in &point.pending {
            if seen.contains(&work) {
                continue;
            }
            seen.push(work);
            match work {
                Work::Qa => {
                    choices.push(Choice::Qa { passed: true });
                    choices.push(Choice::Qa { passed: false });
                    choices.push(Choice::QaCouldNotRun);
                }
                Work::Turn(role) => self.turn_choices(role, &mut choices),
            }
        }
        if let Some(awaiting) = &point.state.awaiting {
            choices.extend([Choice::Approve, Choice::Veto]);
            if self
                .table
                .route_for(Kind::UserAnswer.as_str(), "user")
                .is_some()
            {
                choices.push(Choice::Answer);
            }
            // Anywhere else `/redo` is only a message for the next prompt, not a move.
            if awaiting.on == crate::pipeline::triggers::QA_ERROR_TRIGGER {
                choices.push(Choice::Redo);
            }
        }
        choices
    }

    fn turn_choices(&self, role: &str, choices: &mut Vec<Choice>) {
        let Some(spec) = self.table.role(role) else {
            return;
        };
        for kind in spec.produces.iter().filter_map(|k| k.parse::<Kind>().ok()) {
            if kind == Kind::JudgeScore {
                for verdict in Verdict::ALL {
                    for &severity in &self.severities {
                        choices.push(Choice::Judges {
                            role: role.to_owned(),
                            verdict,
                            severity,
                        });
                    }
                }
            } else {
                choices.push(Choice::Writes {
                    role: role.to_owned(),
                    kind,
                });
            }
        }
        if self.failures {
            choices.push(Choice::Fails {
                role: role.to_owned(),
            });
        }
    }

    /// Make `choice` at `point`: the work it answers is taken off, its event folded, and the
    /// effects carried out. Returns every effect the step produced, in order.
    pub fn step(&self, point: &mut Point, choice: &Choice) -> Vec<Effect> {
        self.step_with::<()>(point, choice, &mut |draft, state| {
            Ok(synthetic(draft, state))
        })
        .unwrap_or_default()
    }

    /// [`World::step`] with every event stamped by `stamp` (a dry run appends each to a real
    /// transcript and folds the event as written).
    pub(crate) fn step_with<E>(
        &self,
        point: &mut Point,
        choice: &Choice,
        stamp: &mut dyn FnMut(Draft, &State) -> Result<Event, E>,
    ) -> Result<Vec<Effect>, E> {
        if let Some(work) = choice.answers()
            && let Some(at) = point.pending.iter().position(|w| *w == work)
        {
            point.pending.remove(at);
        }
        let draft = self.event_for(point, choice);
        self.fold_with(point, draft, stamp)
    }

    /// The event a choice writes, shaped as the dispatcher, QA or `crumb say` would write it.
    pub(crate) fn event_for(&self, point: &Point, choice: &Choice) -> Draft {
        match choice {
            Choice::Writes { role, kind } => Draft::new(role.clone(), *kind)
                .body(format!("(placeholder {} from {role})", kind.as_str())),
            Choice::Judges {
                role,
                verdict,
                severity,
            } => Draft::new(role.clone(), Kind::JudgeScore)
                .body(format!("(placeholder verdict {verdict} × {severity})"))
                .scores(self.claim(point, *verdict, *severity)),
            Choice::Fails { role } => Draft::new("system", Kind::Error)
                .body(format!("{role}'s turn failed"))
                .data(object(json!({ "role": role, "reason": "exit_nonzero" }))),
            Choice::Qa { passed } => Draft::new("system", Kind::QaResult).data(object(json!({
                "status": if *passed { "pass" } else { "fail" },
                "exec_exit_code": i32::from(!passed),
            }))),
            Choice::QaCouldNotRun => Draft::new("system", Kind::QaResult).data(object(json!({
                "status": crate::engine::reducer::QA_STATUS_ERROR,
                "exec_exit_code": 3,
                "error": "QA could not run",
            }))),
            Choice::Approve => Draft::new("user", Kind::UserApprove).body("/approve"),
            Choice::Veto => Draft::new("user", Kind::UserVeto).body("/veto placeholder reason"),
            Choice::Answer => Draft::new("user", Kind::UserAnswer).body("placeholder answer"),
            Choice::Redo => {
                Draft::new("user", Kind::UserIntervene).data(object(json!({ "redo": true })))
            }
        }
    }

    /// The best claim a judge could make for `verdict` over the declared rubric: every dimension
    /// at the top of its band (below a pass, a `source: qa` one as QA found it). The engine's guards then correct
    /// it exactly as they would a real judge's (a PASS without a passing QA run is a FAIL, and so
    /// on). A PARTIAL reaches `partial_at` exactly, filling the judge's dimensions that no
    /// acceptance failure caps first, and never a `source: rework` one (the history caps it).
    fn claim(&self, point: &Point, verdict: Verdict, severity: Severity) -> Scores {
        let qa_passed = point
            .state
            .qa
            .as_ref()
            .is_some_and(crate::engine::state::QaSnapshot::passed);
        let rubric = &self.table.scoring.rubric;
        let mut values: Vec<f64> = rubric
            .iter()
            .map(|dim| match (verdict, dim.source) {
                (Verdict::Pass, _) => dim.scale,
                (_, DimensionSource::Qa) if qa_passed => dim.scale,
                _ => 0.0,
            })
            .collect();
        if verdict == Verdict::Partial {
            let reached: f64 = rubric.iter().zip(&values).map(|(d, v)| d.weight * v).sum();
            let mut left = (self.table.scoring.partial_at - reached).max(0.0);
            let fillable = |d: &&crate::pipeline::rubric::DimensionSpec| {
                d.source == DimensionSource::Judge && d.weight > 0.0
            };
            let uncapped = rubric
                .iter()
                .enumerate()
                .filter(|(_, d)| fillable(d) && d.ac_failure_cap.is_none());
            let capped = rubric
                .iter()
                .enumerate()
                .filter(|(_, d)| fillable(d) && d.ac_failure_cap.is_some());
            for (i, dim) in uncapped.chain(capped) {
                let take = (left / dim.weight).min(dim.scale);
                values[i] = take;
                left -= take * dim.weight;
            }
        }
        let mut scores = Scores {
            aggregate: Some(rubric.iter().zip(&values).map(|(d, v)| d.weight * v).sum()),
            verdict: Some(verdict),
            feedback: Some(format!("(placeholder feedback for {verdict})")),
            deviation: Some(Deviation { kind: severity }),
            ..Scores::default()
        };
        for (dim, score) in rubric.iter().zip(values) {
            scores.set(
                &dim.id,
                Dimension {
                    score,
                    source: ScoreSource::VerifierLlm,
                    lookup: None,
                    evidence: Vec::new(),
                },
            );
        }
        scores
    }

    /// Fold one event and carry out its effects (engine-composed events are folded in turn).
    fn fold(&self, point: &mut Point, first: Draft) -> Vec<Effect> {
        self.fold_with::<()>(point, first, &mut |draft, state| {
            Ok(synthetic(draft, state))
        })
        .unwrap_or_default()
    }

    /// `World::fold` with every event stamped by `stamp`.
    pub(crate) fn fold_with<E>(
        &self,
        point: &mut Point,
        first: Draft,
        stamp: &mut dyn FnMut(Draft, &State) -> Result<Event, E>,
    ) -> Result<Vec<Effect>, E> {
        self.fold_events(point, Vec::new(), vec![first], stamp)
    }

    /// Fold events already written (a dry run's `session.start` and goal), then `drafts`, and
    /// carry out their effects; engine-composed events are stamped with `stamp` and folded too.
    pub fn fold_events<E>(
        &self,
        point: &mut Point,
        written: Vec<Event>,
        drafts: Vec<Draft>,
        stamp: &mut dyn FnMut(Draft, &State) -> Result<Event, E>,
    ) -> Result<Vec<Effect>, E> {
        let mut all = Vec::new();
        let mut written = std::collections::VecDeque::from(written);
        let mut queue = std::collections::VecDeque::from(drafts);
        let mut folded = 0;
        loop {
            let event = if let Some(event) = written.pop_front() {
                event
            } else if let Some(draft) = queue.pop_front() {
                if folded == MAX_FOLDS_PER_STEP {
                    break;
                }
                folded += 1;
                stamp(draft, &point.state)?
            } else {
                break;
            };
            let effects =
                point
                    .state
                    .apply_traced(self.table, &event, Some(&mut self.fired.borrow_mut()));
            for effect in effects {
                if let Some(draft) = Self::carry_out(point, &effect) {
                    queue.push_back(draft);
                }
                all.push(effect);
            }
        }
        point.pending.sort();
        Ok(all)
    }

    /// What the runtime does with one effect, as far as the route is concerned: work becomes
    /// pending, an engine-composed event is appended (and so folded next), a cancel drops the
    /// cancelled turns. `Done` needs nothing: the state already records the end.
    fn carry_out(point: &mut Point, effect: &Effect) -> Option<Draft> {
        match effect {
            Effect::Spawn(spawn) => point.pending.push(Work::Turn(spawn.role.clone())),
            Effect::RunQa(_) => point.pending.push(Work::Qa),
            Effect::Append(append) => return Some((*append.draft).clone()),
            Effect::Cancel(cancel) => point.pending.retain(|work| match (work, &cancel.role) {
                (Work::Turn(_), None) => false,
                (Work::Turn(role), Some(cancelled)) => role != cancelled,
                (Work::Qa, _) => true,
            }),
            Effect::Done(_) => {}
        }
        None
    }
}

/// An explored event: numbered along its path, all at one instant.
fn synthetic(draft: Draft, state: &State) -> Event {
    let id = format!("E{:025}", state.events);
    draft.into_event(id, TS.to_owned(), SESSION.to_owned())
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
