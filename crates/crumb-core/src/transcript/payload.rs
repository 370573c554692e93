//! Which events' `data` the engine reads, and the one way it reads it.
//!
//! Replay skips building `data` for every other kind (over half of a long transcript is
//! `tool.call` lines whose payload nothing routes on). That is only sound if the list below is
//! complete, so every read of `event.data` in the engine goes through `data()`, which checks the
//! kind in debug builds: a new read for an unlisted kind fails the conformance and property tests.

use crate::transcript::{Data, Event, Kind};

/// Whether the reducer (or legacy mapping) reads `data` of events of this kind.
pub fn reads_data(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Spec
            | Kind::SpecUpdate
            // Kinds a pipeline may declare as its plan (`kinds:`), whose data then goes to QA.
            | Kind::Build
            | Kind::Note
            | Kind::StepSocratic
            | Kind::StepConcept
            | Kind::StepResearch
            | Kind::StepResearchVideo
            | Kind::StepDesign
            | Kind::StepJudge
            | Kind::HandoffRequested
            | Kind::VersionReleased
            | Kind::QaResult
            | Kind::JudgeScore
            | Kind::VerifyResult
            | Kind::Done
            | Kind::Error
            | Kind::SessionStart
            // A pipeline's own kinds: any of them may be declared as the plan.
            | Kind::Declared(_)
    ) || kind.as_str().starts_with("user.")
}

/// What [`reads_data_for`] needs to know of a session's pipeline: whether it declares a kind as
/// its plan or build (`kinds:`). A trait, implemented by the compiled table, so the transcript
/// layer reads lines without depending on the pipeline.
pub trait SlotKinds {
    /// Whether the session's pipeline declares `kind` to fill a slot (plan or build).
    fn fills_slot(&self, kind: &str) -> bool;
}

/// Whether the engine reads `data` of events of this kind in a session whose pipeline is
/// `slots`: the kinds it always reads, and of those listed only because a pipeline may declare
/// them as its plan or build (`kinds:`), the ones `slots` does declare so. Replay builds `data`
/// only for these; the engine reads such a kind's `data` only through its slot (`plan_snapshot`).
pub fn reads_data_for(slots: &impl SlotKinds, kind: Kind) -> bool {
    let always = matches!(
        kind,
        Kind::QaResult
            | Kind::JudgeScore
            | Kind::VerifyResult
            | Kind::Done
            | Kind::Error
            | Kind::SessionStart
    ) || kind.as_str().starts_with("user.");
    reads_data(kind) && (always || slots.fills_slot(kind.as_str()))
}

/// `event.data`, for a kind listed in [`reads_data`].
pub fn data(event: &Event) -> Option<&Data> {
    debug_assert!(
        reads_data(event.kind),
        "the engine reads data of `{}`, which transcript::payload::reads_data does not list",
        event.kind
    );
    event.data.as_ref()
}

/// A string field of `data`.
pub fn data_str<'e>(event: &'e Event, key: &str) -> Option<&'e str> {
    data(event)?.get(key)?.as_str()
}
