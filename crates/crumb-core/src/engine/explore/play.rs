//! A dry run: the pipeline played by the real reducer with no agent, no QA and no person, every
//! choice taken from a [`script`](super::script). Each role's turn writes the first of its
//! `produces` kinds with a placeholder body (or the kind a `WRITE:<kind>` entry names, when it is
//! next and the role produces it); a judging turn takes the next verdict of the script.

use super::script::{Entry, QaAnswer};
use super::world::{Choice, Point, Work, World};
use crate::engine::state::State;
use crate::transcript::{Draft, Event, Kind};
use crate::vocab::Outcome;

/// The most steps a dry run takes (every loop is bounded, so this is only a guard).
const MAX_STEPS: usize = 10_000;

/// How a dry run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The session ended with this outcome and reason.
    Done(Outcome, String),
    /// A person is asked and the script has no answer left.
    Awaiting,
    /// Nothing runs, nothing is pending and no person is asked (the runtime would stop idle).
    Idle,
    /// A judging turn came and the script has no verdict left.
    ScriptEnded { role: String },
    /// The next entry does not fit the turn (e.g. `APPROVE` where a verdict is due).
    Mismatch { expected: String, found: Entry },
}

/// What a dry run did.
#[derive(Debug, Clone)]
pub struct Played {
    /// One line per step: the choice and what the engine did.
    pub steps: Vec<String>,
    pub ending: Ending,
    /// Script entries never used.
    pub unused: usize,
    pub state: State,
}

/// Play `world` from `point` (the session after its goal) by `script`, stamping every event with
/// `stamp` (which appends it to the dry run's transcript).
pub fn play<E>(
    world: &World<'_>,
    mut point: Point,
    script: &[Entry],
    stamp: &mut dyn FnMut(Draft, &State) -> Result<Event, E>,
) -> Result<Played, E> {
    let mut steps = Vec::new();
    let mut next = 0;
    let ending = loop {
        if let Some(done) = &point.state.done {
            break Ending::Done(
                done.outcome.unwrap_or(Outcome::Stopped),
                done.reason.clone(),
            );
        }
        if steps.len() >= MAX_STEPS {
            break Ending::Idle;
        }
        let choice = match decide(world, &point, script.get(next)) {
            Decision::Take(choice, consumed) => {
                next += usize::from(consumed);
                choice
            }
            Decision::Stop(ending) => break ending,
        };
        let awaiting_before = point.state.awaiting.is_some();
        let effects = world.step_with(&mut point, &choice, stamp)?;
        let then =
            super::graph::summarise(&effects, awaiting_before, point.state.awaiting.is_some());
        steps.push(
            super::StepLabel {
                choice: choice.describe_in(&point.state),
                then,
            }
            .line(),
        );
    };
    Ok(Played {
        steps,
        ending,
        unused: script.len().saturating_sub(next),
        state: point.state,
    })
}

enum Decision {
    /// Make this choice; `true` when it used the script's next entry.
    Take(Choice, bool),
    Stop(Ending),
}

fn decide(world: &World<'_>, point: &Point, entry: Option<&Entry>) -> Decision {
    if let Some(work) = point.pending.first() {
        return match work {
            Work::Qa => match entry {
                Some(Entry::Qa(answer)) => Decision::Take(
                    match answer {
                        QaAnswer::Pass => Choice::Qa { passed: true },
                        QaAnswer::Fail => Choice::Qa { passed: false },
                        QaAnswer::Error => Choice::QaCouldNotRun,
                    },
                    true,
                ),
                _ => Decision::Take(Choice::Qa { passed: true }, false),
            },
            Work::Turn(role) => turn(world, role, entry),
        };
    }
    if point.state.awaiting.is_some() {
        return match entry {
            Some(Entry::Approve) => Decision::Take(Choice::Approve, true),
            Some(Entry::Veto) => Decision::Take(Choice::Veto, true),
            Some(Entry::Redo) => Decision::Take(Choice::Redo, true),
            None => Decision::Stop(Ending::Awaiting),
            Some(other) => Decision::Stop(Ending::Mismatch {
                expected: "a person's APPROVE, VETO or REDO".to_owned(),
                found: *other,
            }),
        };
    }
    Decision::Stop(Ending::Idle)
}

fn turn(world: &World<'_>, role: &str, entry: Option<&Entry>) -> Decision {
    let produces: Vec<Kind> = world
        .table
        .role(role)
        .map(|r| r.produces.iter().filter_map(|k| k.parse().ok()).collect())
        .unwrap_or_default();
    if produces.contains(&Kind::JudgeScore) {
        return match entry {
            Some(Entry::Verdict(verdict, severity)) => Decision::Take(
                Choice::Judges {
                    role: role.to_owned(),
                    verdict: *verdict,
                    severity: *severity,
                },
                true,
            ),
            None => Decision::Stop(Ending::ScriptEnded {
                role: role.to_owned(),
            }),
            Some(other) => Decision::Stop(Ending::Mismatch {
                expected: format!("a verdict for {role}'s turn"),
                found: *other,
            }),
        };
    }
    if let Some(Entry::Write(kind)) = entry
        && produces.contains(kind)
    {
        return Decision::Take(
            Choice::Writes {
                role: role.to_owned(),
                kind: *kind,
            },
            true,
        );
    }
    match produces.first() {
        Some(kind) => Decision::Take(
            Choice::Writes {
                role: role.to_owned(),
                kind: *kind,
            },
            false,
        ),
        None => Decision::Take(
            Choice::Fails {
                role: role.to_owned(),
            },
            false,
        ),
    }
}
