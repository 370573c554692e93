//! The transcript envelope: one [`Event`] per JSONL line, and the [`Draft`] a writer turns into one.
//!
//! Optional fields are omitted when absent (never `null`) and unknown top-level keys are rejected,
//! so a line either means exactly what the types say or is reported as invalid. Deserialising is
//! plain derived serde (no `flatten`, no `Value` detours for the common fields) because replay
//! parses every line of long transcripts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::event_kind::Kind;
use super::event_metadata::Metadata;
use super::scores::Scores;

/// Free-form payload of an event (`data`). Routing keys of specific kinds live here.
pub type Data = serde_json::Map<String, serde_json::Value>;

/// One line of a crumb session's `transcript.jsonl`: an append-only event. The transcript is the
/// only source of a session's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "crumb transcript event")]
pub struct Event {
    /// ULID (Crockford base32, upper case). Strictly increasing in file order.
    #[schemars(regex(pattern = r"^[0-9A-HJKMNP-TV-Z]{26}$"))]
    pub id: String,
    /// When the event was written: RFC 3339 UTC with millisecond precision and `Z`.
    #[schemars(extend("format" = "date-time"))]
    pub ts: String,
    /// The session this event belongs to.
    #[schemars(length(min = 1))]
    pub session_id: String,
    /// Who wrote it: a role id of the pipeline, or `user`, `system`, `coordinator`, `validator`.
    #[schemars(
        regex(pattern = r"^[A-Za-z][A-Za-z0-9_-]*$"),
        length(min = 1, max = 64)
    )]
    pub from: String,
    /// What the event is.
    pub kind: Kind,
    /// Addressee: a role id, or `*` for everyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub to: Option<String>,
    /// The event this one answers or was caused by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_event_id: Option<String>,
    /// The workflow step this event belongs to (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Step>,
    /// Free text: goal, spec, feedback, notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Kind-specific payload (open object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
    /// Files this event produced or refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactRef>,
    /// A verifier's scores (`judge.score`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<Box<Scores>>,
    /// Provenance, usage and bookkeeping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Box<Metadata>>,
}

/// Workflow step an event belongs to (13 steps, informational). Nothing routes on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Step {
    /// Clarifying questions with the user.
    #[serde(rename = "socratic")]
    Socratic,
    /// Shaping the concept.
    #[serde(rename = "concept")]
    Concept,
    /// Research.
    #[serde(rename = "research")]
    Research,
    /// Evidence from a video clip.
    #[serde(rename = "research.video")]
    ResearchVideo,
    /// Design.
    #[serde(rename = "design")]
    Design,
    /// Building.
    #[serde(rename = "builder")]
    Builder,
    /// Execution QA.
    #[serde(rename = "qa")]
    Qa,
    /// Verification.
    #[serde(rename = "verifier")]
    Verifier,
    /// Judging trace: first grading.
    #[serde(rename = "grader")]
    Grader,
    /// Judging trace: critique of the grade.
    #[serde(rename = "critic")]
    Critic,
    /// Judging trace: defence of the build.
    #[serde(rename = "defender")]
    Defender,
    /// Judging trace: final grade.
    #[serde(rename = "regrader")]
    Regrader,
    /// Synthesis of the judging trace.
    #[serde(rename = "synth")]
    Synth,
}

/// A file an event refers to, pinned by content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRef {
    /// Path relative to the session directory.
    #[schemars(length(min = 1))]
    pub path: String,
    /// SHA-256 of the file's content, lower-case hex.
    #[schemars(regex(pattern = r"^[a-f0-9]{64}$"))]
    pub sha256: String,
    /// What the file is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<ArtifactRole>,
}

/// What an artifact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactRole {
    /// Source code.
    Src,
    /// Documentation.
    Doc,
    /// Configuration.
    Config,
    /// A screenshot (evidence).
    Screenshot,
    /// Data files.
    Data,
}

/// An event before the writer stamps `id`, `ts` and `session_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "crumb event draft")]
pub struct Draft {
    /// Who writes it: a role id of the pipeline, or `user`, `system`, `coordinator`, `validator`.
    #[schemars(
        regex(pattern = r"^[A-Za-z][A-Za-z0-9_-]*$"),
        length(min = 1, max = 64)
    )]
    pub from: String,
    /// What the event is.
    pub kind: Kind,
    /// Addressee: a role id, or `*` for everyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub to: Option<String>,
    /// The event this one answers or was caused by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_event_id: Option<String>,
    /// The workflow step this event belongs to (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Step>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Kind-specific payload (open object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
    /// Files this event produced or refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactRef>,
    /// A verifier's scores (`judge.score`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<Scores>,
    /// Provenance, usage and bookkeeping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Draft {
    /// A draft with only `from` and `kind` set.
    pub fn new(from: impl Into<String>, kind: Kind) -> Self {
        Draft {
            from: from.into(),
            kind,
            to: None,
            parent_event_id: None,
            step: None,
            body: None,
            data: None,
            artifacts: Vec::new(),
            scores: None,
            metadata: None,
        }
    }

    #[must_use]
    pub fn to(mut self, to: impl Into<String>) -> Self {
        self.to = Some(to.into());
        self
    }

    #[must_use]
    pub fn parent(mut self, event_id: impl Into<String>) -> Self {
        self.parent_event_id = Some(event_id.into());
        self
    }

    #[must_use]
    pub fn step(mut self, step: Step) -> Self {
        self.step = Some(step);
        self
    }

    #[must_use]
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }

    #[must_use]
    pub fn data(mut self, data: Data) -> Self {
        self.data = Some(data);
        self
    }

    #[must_use]
    pub fn artifact(mut self, artifact: ArtifactRef) -> Self {
        self.artifacts.push(artifact);
        self
    }

    #[must_use]
    pub fn scores(mut self, scores: Scores) -> Self {
        self.scores = Some(scores);
        self
    }

    #[must_use]
    pub fn metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The event this draft becomes once stamped.
    pub fn into_event(self, id: String, ts: String, session_id: String) -> Event {
        Event {
            id,
            ts,
            session_id,
            from: self.from,
            kind: self.kind,
            to: self.to,
            parent_event_id: self.parent_event_id,
            step: self.step,
            body: self.body,
            data: self.data,
            artifacts: self.artifacts,
            scores: self.scores.map(Box::new),
            metadata: self.metadata.map(Box::new),
        }
    }
}

impl Event {
    /// The draft this event was made from (drops `id`, `ts` and `session_id`), e.g. to re-append
    /// an event to another transcript.
    pub fn into_draft(self) -> Draft {
        Draft {
            from: self.from,
            kind: self.kind,
            to: self.to,
            parent_event_id: self.parent_event_id,
            step: self.step,
            body: self.body,
            data: self.data,
            artifacts: self.artifacts,
            scores: self.scores.map(|scores| *scores),
            metadata: self.metadata.map(|metadata| *metadata),
        }
    }

    /// `metadata.visibility == private`.
    pub fn is_private(&self) -> bool {
        self.metadata
            .as_ref()
            .is_some_and(|m| m.visibility == Some(super::event_metadata::Visibility::Private))
    }
}
