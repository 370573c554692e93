//! The event kind vocabulary: the 36 kinds of the transcript format plus the few crumb adds for
//! itself, each with its wire string and the explanation `crumb explain <kind>` prints, and the
//! kinds a pipeline declares for itself ([`Kind::Declared`], see [`declared`]).
//!
//! One macro table declares the vocabulary so the enum, `as_str`, `FromStr`, `ALL` and the
//! explanations can never disagree.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

pub mod declared;

use declared::DeclaredKind;

macro_rules! kinds {
    ($( $(#[doc = $doc:literal])* $variant:ident = $wire:literal, writer: $writer:literal, fields: $fields:literal; )*) => {
        /// What an event is. The wire string is the `kind` field of a transcript line.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
        pub enum Kind {
            $( $(#[doc = $doc])* #[serde(rename = $wire)] $variant, )*
            /// A kind the session's pipeline declares under `kinds:` (a name outside the vocabulary
            /// and its reserved namespaces). Readers skip it when the session's pipeline does not
            /// declare it; `crumb event` refuses it.
            #[serde(untagged)]
            Declared(DeclaredKind),
        }

        impl Kind {
            /// Every kind of the vocabulary, in declaration order (declared kinds are not listed).
            pub const ALL: &'static [Kind] = &[ $( Kind::$variant, )* ];

            /// The wire string, e.g. `"judge.score"`.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Kind::$variant => $wire, )*
                    Kind::Declared(name) => name.as_str(),
                }
            }

            /// The vocabulary kind spelled `s`; `None` for anything else, a declarable name included.
            pub fn vocabulary(s: &str) -> Option<Kind> {
                match s {
                    $( $wire => Some(Kind::$variant), )*
                    _ => None,
                }
            }

            fn parts(self) -> (&'static str, &'static str, &'static str) {
                match self {
                    $( Kind::$variant => (concat!($($doc, "\n",)*), $writer, $fields), )*
                    Kind::Declared(_) => (
                        "An artifact kind the session's pipeline declares under `kinds:`.",
                        "the roles whose `produces` lists it",
                        "`body`, `data` (checked against the declared `schema:`, if any), `artifacts`",
                    ),
                }
            }
        }

        /// A vocabulary kind, or a declarable name ([`DeclaredKind`]); which declared names a
        /// session accepts is its pipeline's business, checked by the readers and `crumb event`.
        impl FromStr for Kind {
            type Err = UnknownKind;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                if let Some(kind) = Kind::vocabulary(s) {
                    return Ok(kind);
                }
                DeclaredKind::new(s)
                    .map(Kind::Declared)
                    .map_err(|_| UnknownKind(s.chars().take(80).collect()))
            }
        }

        /// Every wire string of the vocabulary, for the declared kinds' schema.
        pub(crate) const VOCABULARY: &[&str] = &[ $( $wire, )* ];
    };
}

kinds! {
    /// A session began. Records the pipeline's content hash, resolved bindings and limits so replay
    /// never depends on files or environment variables.
    SessionStart = "session.start", writer: "the runner (`from: system`)", fields: "`data` (pipeline hash, bindings, limits)";
    /// A session ended (the process that ran it stopped). The terminal reason is in `done`.
    SessionEnd = "session.end", writer: "the runner (`from: system`)", fields: "`body`";
    /// A role's spawn started.
    AgentWake = "agent.wake", writer: "the dispatcher, on behalf of the role", fields: "`data` (resolved adapter), `metadata.effect_id`";
    /// A role's spawn ended (success or not); carries its usage.
    AgentStop = "agent.stop", writer: "the dispatcher, on behalf of the role", fields: "`metadata.tokens_in/tokens_out/cost_usd/latency_ms`, `metadata.effect_id`";
    /// The user's goal: what the session should produce.
    Goal = "goal", writer: "the user, through the runner (`crumb run`)", fields: "`body` (goal text)";
    /// A clarifying question to the user.
    QuestionSocratic = "question.socratic", writer: "a planning role", fields: "`body`";
    /// The user's answer to a clarifying question.
    AnswerSocratic = "answer.socratic", writer: "the user", fields: "`body`, `parent_event_id`";
    /// The specification the builder works from.
    Spec = "spec", writer: "a planning role", fields: "`body`, `data.acceptance_criteria`, `artifacts`";
    /// A revised specification (same slot as `spec`).
    SpecUpdate = "spec.update", writer: "a planning role", fields: "`body`, `data`, `artifacts`";
    /// A build: the builder's output.
    Build = "build", writer: "the builder role", fields: "`body`, `artifacts` (path + sha256)";
    /// The result of deterministic execution QA. Ground truth for the execution dimension (D2).
    QaResult = "qa.result", writer: "the runner only (`crumb event` refuses it)", fields: "`data.exec_exit_code`, `data.ac_results`";
    /// Legacy alias of `judge.score`. Recorded, never routed or counted.
    VerifyResult = "verify.result", writer: "a verifier role (legacy)", fields: "`scores`";
    /// A verifier's scores and verdict. The only kind that routes on a verdict; the engine recomputes
    /// the aggregate and verdict and records every correction in an `audit` event.
    JudgeScore = "judge.score", writer: "a verifier role", fields: "`scores` (D1–D6, verdict, deviation.type, feedback, suggested_change)";
    /// The session reached a terminal state.
    Done = "done", writer: "the runner (`from: system`)", fields: "`data.reason`";
    /// A short summary of an agent's reasoning (conventionally private).
    AgentThoughtSummary = "agent.thought_summary", writer: "any role", fields: "`body`, `metadata.visibility`";
    /// Free-form note.
    Note = "note", writer: "anyone", fields: "`body`";
    /// Step marker: clarifying questions.
    StepSocratic = "step.socratic", writer: "a planning role", fields: "`body`, `step`";
    /// Step marker: concept.
    StepConcept = "step.concept", writer: "a planning role", fields: "`body`, `step`";
    /// Step marker: research.
    StepResearch = "step.research", writer: "a planning or research role", fields: "`body`, `step`";
    /// Step marker: evidence from a video clip.
    StepResearchVideo = "step.research.video", writer: "a research role", fields: "`body`, `data`, `metadata.evidence_kind`";
    /// Step marker: design.
    StepDesign = "step.design", writer: "a planning role", fields: "`body`, `step`";
    /// Step marker: one stage of a judging trace (grader, critic, defender, regrader).
    StepJudge = "step.judge", writer: "a verifier role", fields: "`body`, `step`";
    /// A user intervention: append, goto, swap, cancel, reset-circuit, ask (verbs in `data`).
    UserIntervene = "user.intervene", writer: "the user (inbox or Studio)", fields: "`body`, `data`, `to`";
    /// The user rejects the current result: fires the `user.veto` route, the reason as feedback.
    UserVeto = "user.veto", writer: "the user", fields: "`body` (reason)";
    /// The user approves the verdict that awaits them: fires the pipeline's `user.approve` route.
    UserApprove = "user.approve", writer: "the user", fields: "`body`";
    /// crumb addition: the user answers what the session awaits (a question or a verdict): fires
    /// the pipeline's `user.answer` route, the answer handed to the roles it spawns as a message.
    UserAnswer = "user.answer", writer: "the user", fields: "`body` (the answer)";
    /// The user pauses the session, or one role (`to`).
    UserPause = "user.pause", writer: "the user", fields: "`to`";
    /// The user resumes the session, or one role (`to`); queued spawns are re-fired.
    UserResume = "user.resume", writer: "the user", fields: "`to`";
    /// Acknowledges a `user.*` event.
    Ack = "ack", writer: "the runner (`from: system`)", fields: "`metadata.ack_for`, `body`";
    /// A role hands work to another role.
    HandoffRequested = "handoff.requested", writer: "any role", fields: "`to`, `body`";
    /// A rollback to an earlier role.
    HandoffRollback = "handoff.rollback", writer: "a verifier role or the runner", fields: "`to`, `body`";
    /// A file was created or changed.
    ArtifactCreated = "artifact.created", writer: "the runner's artifact watcher", fields: "`artifacts`";
    /// A version was released.
    VersionReleased = "version.released", writer: "the runner", fields: "`body`, `data`";
    /// Something failed: a spawn, an adapter, a QA run.
    Error = "error", writer: "the dispatcher or a role", fields: "`body`, `data`";
    /// A deterministic check corrected or refused something (anti-deception guards, the
    /// `crumb event` firewall).
    Audit = "audit", writer: "the runner (`from: system` or `validator`)", fields: "`data.violation`, `metadata.audit_violations`, `metadata.tool`";
    /// A tool call observed in an agent's stream.
    ToolCall = "tool.call", writer: "the dispatcher's stream tap", fields: "`body`, `data.tool_kind`";
    /// A tool call's result.
    ToolResult = "tool.result", writer: "the dispatcher's stream tap", fields: "`body`, `data`";
    /// crumb addition: the session waits for a person (a route said `await: human`, e.g. after
    /// PARTIAL). Persisted so replay and resume know it; `user.approve`, `user.veto` or
    /// `user.answer` answers it.
    SessionAwaiting = "session.awaiting", writer: "the runner (`from: system`)", fields: "`body` (what is asked), `data.reason`";
    /// crumb addition: a hook fired (budget warning, stuck crossing, circuit breaker), recorded as an
    /// event instead of only being logged.
    Hook = "hook", writer: "the runner (`from: system`)", fields: "`data.hook` (name), `body`";
}

impl Kind {
    /// Kinds only the runner may write. `crumb event` refuses them from agents (the firewall).
    pub fn is_runner_owned(self) -> bool {
        matches!(
            self,
            Kind::SessionStart
                | Kind::Goal
                | Kind::SessionEnd
                | Kind::SessionAwaiting
                | Kind::AgentWake
                | Kind::AgentStop
                | Kind::QaResult
                | Kind::Done
                | Kind::Audit
                | Kind::Ack
                | Kind::Hook
                | Kind::ArtifactCreated
                | Kind::UserIntervene
                | Kind::UserVeto
                | Kind::UserApprove
                | Kind::UserAnswer
                | Kind::UserPause
                | Kind::UserResume
        )
    }

    /// Whether this is a pipeline-declared kind rather than one of the vocabulary.
    pub fn is_declared(self) -> bool {
        matches!(self, Kind::Declared(_))
    }

    /// Kinds crumb adds to the base vocabulary (absent from the legacy transcript schema).
    pub fn is_crumb_addition(self) -> bool {
        matches!(self, Kind::SessionAwaiting | Kind::Hook | Kind::UserAnswer)
    }

    /// One paragraph for `crumb explain <kind>`: meaning, writer, key fields.
    pub fn explanation(self) -> String {
        let (doc, writer, fields) = self.parts();
        let meaning = doc.lines().map(str::trim).collect::<Vec<_>>().join(" ");
        format!(
            "{kind} (event kind)\n\n{meaning}\n\nWritten by: {writer}.\nKey fields: {fields}.\n",
            kind = self.as_str(),
            meaning = meaning.trim(),
        )
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses through [`FromStr`] so an unknown kind gets a short, specific message instead of the
/// list of all 38 kinds.
impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl serde::de::Visitor<'_> for KindVisitor {
            type Value = Kind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an event kind such as \"build\" or \"judge.score\", or a declared name",
                )
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Kind, E> {
                value.parse().map_err(|UnknownKind(kind)| {
                    E::custom(format_args!(
                        "unknown event kind `{kind}`: neither in the vocabulary (`crumb schema transcript` lists it) nor a name a pipeline may declare (lower-case words joined by `.`)"
                    ))
                })
            }
        }
        deserializer.deserialize_str(KindVisitor)
    }
}

/// A `kind` string that is not in the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind `{0}`")]
pub struct UnknownKind(pub String);

/// `crumb explain` fallback: the explanation of a vocabulary kind, if `name` is one.
pub fn explain(name: &str) -> Option<String> {
    Kind::vocabulary(name).map(Kind::explanation)
}
