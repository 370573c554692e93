//! `crumb export <session> --format html|chrome-trace|otlp-json|md`: what happened in a session,
//! for someone who has no crumb. Every format is built from one read of the transcript (the
//! engine's fold of its events, what the formats quote of them and one list of
//! [`spans::Span`]s). The read keeps no event it does not quote ([`Kept`]): memory follows the
//! spans, not the transcript. [`live`] sends the same OTLP spans to a collector while a session
//! runs.

pub(crate) mod chrome_trace;
pub(crate) mod html;
pub(crate) mod live;
pub(crate) mod markdown;
pub(crate) mod otlp;
pub(crate) mod spans;

use std::path::PathBuf;

use crate::engine::story::{Before, Story, StoryFold};
use crate::engine::{Replay, State};
use crate::runtime::session_dir::SessionDir;
use crate::transcript::Event;
use crate::transcript::reader::each_event;

/// A session as the exporters see it.
pub(crate) struct Loaded {
    pub id: String,
    pub dir: PathBuf,
    /// The pipeline's name.
    pub pipeline: String,
    pub state: State,
    /// The rounds, as `crumb status` and Studio tell them.
    pub story: Story,
    pub events: Kept,
    pub spans: Vec<spans::Span>,
    /// The declared rubric's dimension ids, in order.
    pub dimensions: Vec<String>,
    /// The highest aggregate the declared rubric allows (Σ weight × scale).
    pub max_aggregate: f64,
}

/// What the formats quote of a session's events, gathered while it is read (the events
/// themselves are not kept).
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// Events read.
    pub count: usize,
    /// The first `session.start`.
    pub start: Option<Event>,
    /// The time of the first and of the last event with a readable timestamp (Unix ms).
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    /// Every file an event recorded, latest record per path: path → `(sha256, role)`.
    pub artifacts: indexmap::IndexMap<String, (String, Option<String>)>,
    /// Every `qa.result`, in order.
    pub qa_results: Vec<Event>,
    /// Every `judge.score`, `done` and `audit` (the trace's instant events), in order.
    pub marks: Vec<Event>,
    /// The last [`LAST_EVENTS`], in order.
    pub last: std::collections::VecDeque<Event>,
}

/// The last events the HTML report lists (a long session keeps its shape, not every tool call).
pub(crate) const LAST_EVENTS: usize = 500;

impl Kept {
    fn take(&mut self, event: Event) {
        use crate::transcript::Kind;
        self.count += 1;
        if let Some(at) = spans::unix_ms(&event.ts) {
            self.first_ms.get_or_insert(at);
            self.last_ms = Some(at);
        }
        if self.start.is_none() && event.kind == Kind::SessionStart {
            self.start = Some(event.clone());
        }
        for artifact in &event.artifacts {
            let role = artifact
                .role
                .and_then(|r| serde_json::to_value(r).ok())
                .and_then(|v| v.as_str().map(str::to_owned));
            // As before: a path recorded again keeps its first place with the latest record.
            self.artifacts
                .insert(artifact.path.clone(), (artifact.sha256.clone(), role));
        }
        if event.kind == Kind::QaResult {
            self.qa_results.push(event.clone());
        }
        if matches!(event.kind, Kind::JudgeScore | Kind::Done | Kind::Audit) {
            self.marks.push(event.clone());
        }
        if self.last.len() == LAST_EVENTS {
            self.last.pop_front();
        }
        self.last.push_back(event);
    }
}

/// Read the session once: every event (the folding readers' rules: bad lines and duplicated ids
/// skipped) folded into the state its frozen pipeline gives, its spans, and what the formats
/// quote of it ([`Kept`]).
pub(crate) fn load(dir: &SessionDir) -> Result<Loaded, String> {
    let table = dir.table().map_err(|e| e.to_string())?;
    let file = std::fs::File::open(dir.transcript())
        .map_err(|e| format!("cannot read {}: {e}", dir.transcript().display()))?;
    let mut replay = Replay::new();
    let mut story = StoryFold::new();
    let mut events = Kept::default();
    let mut builder = spans::SpanBuilder::default();
    let mut spans = Vec::new();
    each_event(
        std::io::BufReader::with_capacity(256 * 1024, file),
        |event: Event| {
            // A kind the session's pipeline does not declare is skipped, as every fold skips it.
            if table.accepts_kind(event.kind) {
                let before = Before::of(&replay.state);
                let effects = replay.fold_event(&table, &event);
                story.observe(&table, &event, before, &replay.state, &effects);
                spans.extend(builder.push(&event));
                events.take(event);
            }
        },
        |_| {},
    );
    let spans = spans::ordered(spans, builder);
    Ok(Loaded {
        id: dir.id().to_owned(),
        dir: dir.path().to_path_buf(),
        pipeline: table.name.clone(),
        state: replay.state,
        story: story.into_story(),
        events,
        spans,
        dimensions: table.scoring.rubric.iter().map(|d| d.id.clone()).collect(),
        max_aggregate: crate::pipeline::rubric::max_aggregate(&table.scoring.rubric),
    })
}

/// `pass`, `fail`, … or `awaiting` / `unfinished` for a session that has not ended.
pub(crate) fn outcome_of(state: &State) -> String {
    match (&state.done, &state.awaiting) {
        (Some(done), _) => done.outcome.map_or("unknown", |o| o.as_str()).to_owned(),
        (None, Some(_)) => "awaiting".to_owned(),
        (None, None) => "unfinished".to_owned(),
    }
}

impl Loaded {
    /// `pass`, `fail`, … or `awaiting` / `unfinished` for a session that has not ended.
    pub(crate) fn outcome(&self) -> String {
        outcome_of(&self.state)
    }

    /// `name = value` for each input recorded in `session.start`, in declaration order.
    pub(crate) fn inputs(&self) -> Vec<String> {
        self.events
            .start
            .as_ref()
            .and_then(|e| e.data.as_ref()?.get("inputs")?.as_object().cloned())
            .unwrap_or_default()
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect()
    }

    pub(crate) fn reason(&self) -> Option<&str> {
        self.state.done.as_ref().map(|d| d.reason.as_str())
    }

    /// The time of the first event, in Unix milliseconds (0 for an empty transcript).
    pub(crate) fn origin_ms(&self) -> i64 {
        self.events.first_ms.unwrap_or(0)
    }
}

/// One line of the scorecard: a dimension, the verifier's score and the corrected one.
pub(crate) struct ScoreLine {
    pub dimension: String,
    pub raw: Option<f64>,
    pub corrected: f64,
}

impl Loaded {
    /// The latest verdict's declared dimensions, raw beside corrected.
    pub(crate) fn scorecard(&self) -> Vec<ScoreLine> {
        let Some(latest) = &self.state.verification.latest else {
            return Vec::new();
        };
        latest
            .corrected
            .dimensions
            .iter()
            .zip(latest.raw.dimensions.iter())
            .enumerate()
            .map(|(i, (corrected, raw))| ScoreLine {
                dimension: self
                    .dimensions
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("#{}", i + 1)),
                raw: *raw,
                corrected: *corrected,
            })
            .collect()
    }

    /// `(verdict, aggregate)` the routes acted on: a join's combined verdict, else the latest
    /// judge's, corrected.
    pub(crate) fn verdict(&self) -> Option<(String, f64)> {
        if let Some(joined) = &self.state.verification.routed_join {
            return Some((joined.verdict.to_string(), joined.aggregate));
        }
        self.state
            .verification
            .latest
            .as_ref()
            .map(|v| (v.corrected.verdict.to_string(), v.corrected.aggregate))
    }

    /// Every file an event recorded, latest record per path: `(path, sha256, role)`.
    pub(crate) fn artifacts(&self) -> Vec<(String, String, Option<String>)> {
        self.events
            .artifacts
            .iter()
            .map(|(path, (sha, role))| (path.clone(), sha.clone(), role.clone()))
            .collect()
    }

    /// The prompt files of the session (`prompts/<role>-<n>.md`), sorted.
    pub(crate) fn prompts(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.dir.join("prompts"))
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        found.sort();
        found
    }

    /// Σ tokens in and out, and cost, over every turn.
    pub(crate) fn usage(&self) -> (u64, u64, Option<f64>) {
        let mut cost: Option<f64> = None;
        let (mut input, mut output) = (0, 0);
        for span in &self.spans {
            input += span.tokens_in.unwrap_or(0);
            output += span.tokens_out.unwrap_or(0);
            if let Some(c) = span.cost_usd {
                cost = Some(cost.unwrap_or(0.0) + c);
            }
        }
        (input, output, cost)
    }
}
