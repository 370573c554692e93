//! Partial-order reduction: interleavings that commute are explored once.
//!
//! A branch that reports after its fan-out joined (`join: any`, a quorum) is *late*: its
//! `judge.score` is assessed and counted towards `max_verify`, and routed nowhere. What a late
//! branch can do — report (any verdict: none is read again), fail, be retried, open its own
//! circuit — touches only its own record, the verification count and the session's end. An
//! item that opens no round, starts no judge and leaves the count alone (the writer's next
//! turn, a QA run that opens no round) touches none of that, and past `max_verify` nothing
//! reads what a late branch changes. So [`ample`] picks one such item and the search explores
//! only its answers there: any path that lets other work go first reaches, step for step, the
//! same states once the item's answer is moved to its front (the two commute), and a path that
//! ends before the item answers ends the same way after it (no end of the others reads what the
//! item changed). Outcomes, dead ends, loops and the worst cases per role are kept.
//!
//! Two conditions keep that sound: the ample item's answers never end the session (a path that
//! ends on other work must still be there after them), and a point whose ample step would
//! reach a state numbered no later than itself is fully expanded ([`super::graph`]): every loop
//! of the reduced graph has such a step, so no loop puts the other work off forever.

use super::graph::Stepped;
use super::symmetry::Symmetry;
use super::world::{Choice, Point, Work, World};
use crate::pipeline::table::Action;
use crate::transcript::Kind;

/// Whether `role`'s `judge.score` now would be a late branch: its route joins, no open
/// fan-out waits for it (so it is recorded, never routed), and the join route has no `max:`
/// (whose count a late branch would spend).
pub(super) fn is_late_branch(world: &World<'_>, point: &Point, role: &str) -> bool {
    let table = world.table;
    let judges = table
        .role(role)
        .is_some_and(|r| r.produces.iter().any(|k| k == Kind::JudgeScore.as_str()));
    let joins = table
        .route_for(Kind::JudgeScore.as_str(), role)
        .is_some_and(|r| matches!(r.action, Action::Join { .. }) && r.max.is_none());
    let waited_for = point.state.fan_out.as_ref().is_some_and(|f| {
        f.joined.is_none()
            && f.roles.iter().any(|r| r == role)
            && !f.results.iter().any(|r| r.role == role)
    });
    judges && joins && !waited_for
}

/// `choices` with a late branch's verdicts as one: none is routed or read again, so every
/// verdict × severity it could give leads to the same state (only the count moves).
pub(super) fn late_verdicts_as_one(
    world: &World<'_>,
    point: &Point,
    choices: Vec<Choice>,
) -> Vec<Choice> {
    let mut kept: Vec<String> = Vec::new();
    choices
        .into_iter()
        .filter(|choice| {
            let Choice::Judges { role, .. } = choice else {
                return true;
            };
            if !is_late_branch(world, point, role) {
                return true;
            }
            if kept.contains(role) {
                return false;
            }
            kept.push(role.clone());
            true
        })
        .collect()
}

/// The one work item whose answers may go first at `point`, and those answers, made (see
/// [`Stepped`]); `None` when the point must be fully expanded. No person may be asked (their
/// commands read what late branches change), and no answer may end the session (a path that
/// ends on another item must still be there after it). Two items qualify:
///
/// - past `max_verify`, a late branch: every comparison with the count already says "spent",
///   no round can open and no judge start, so nothing else out reads what it changes;
/// - otherwise the one item out besides late branches, when none of its answers opens or
///   changes a fan-out, moves the verification count or starts a judge (so it reads and writes
///   nothing a late branch does).
pub(super) fn ample(
    world: &World<'_>,
    point: &Point,
    choices: &[Choice],
    symmetry: &Symmetry,
) -> Option<Vec<Stepped>> {
    if !symmetry.reduced || !symmetry.engine_events_unrouted || point.state.awaiting.is_some() {
        return None;
    }
    let late = |work: &Work| matches!(work, Work::Turn(role) if is_late_branch(world, point, role));
    let mut lates: Vec<&Work> = point.pending.iter().filter(|w| late(w)).collect();
    lates.dedup();
    if lates.is_empty() {
        return None;
    }
    let spent = symmetry
        .count_cap
        .is_some_and(|cap| point.state.verification.count >= cap);
    if spent {
        for item in lates {
            if let Some(steps) = answers_of(world, point, choices, symmetry, item, &|next| {
                next.state.done.is_none()
            }) {
                return Some(steps);
            }
        }
    }
    let mut others = point.pending.iter().filter(|work| !late(work));
    let item = others.next()?;
    if others.any(|work| work != item) {
        return None;
    }
    let judge = |work: &Work| {
        matches!(work, Work::Turn(role) if world.table.role(role).is_some_and(|r| {
            r.produces.iter().any(|k| k == Kind::JudgeScore.as_str())
        }))
    };
    let judges_before = point.pending.iter().filter(|w| judge(w)).count();
    answers_of(world, point, choices, symmetry, item, &|next| {
        next.state.done.is_none()
            && next.state.fan_out == point.state.fan_out
            && next.state.verification.count == point.state.verification.count
            && next.pending.iter().filter(|w| judge(w)).count() == judges_before
    })
}

/// The answers to `item` among `choices`, made, when each point they reach `keeps` and they
/// are not every choice there is.
fn answers_of(
    world: &World<'_>,
    point: &Point,
    choices: &[Choice],
    symmetry: &Symmetry,
    item: &Work,
    keeps: &dyn Fn(&Point) -> bool,
) -> Option<Vec<Stepped>> {
    let answers: Vec<&Choice> = choices
        .iter()
        .filter(|choice| choice.answers().as_ref() == Some(item))
        .collect();
    if answers.is_empty() || answers.len() == choices.len() {
        return None;
    }
    let mut steps = Vec::with_capacity(answers.len());
    for choice in answers {
        let step = Stepped::take(world, point, choice.clone(), symmetry);
        if !keeps(&step.next) {
            return None;
        }
        steps.push(step);
    }
    Some(steps)
}
