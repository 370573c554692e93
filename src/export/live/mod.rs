//! Live OTLP export: the spans of a session sent to an OpenTelemetry collector while it runs —
//! each turn (with its tool calls), QA run and wait for a person as soon as it ends, the session
//! span when the session ends. The spans are built by the same rules and code as
//! `crumb export --format otlp-json` ([`SpanBuilder`], [`otlp::spans_of`]), so the live trace and
//! the file agree span for span. The exporter only watches the events the coordinator folds; a
//! collector that is down or slow never blocks or fails the run (see [`sender`]).

pub(crate) mod config;
mod queue;
mod sender;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;

use super::otlp::{self, SessionSummary};
use super::spans::SpanBuilder;
use crate::engine::State;
use crate::transcript::{Event, Kind};
pub(crate) use config::LiveConfig;
use queue::Queue;
use sender::{Closing, Counts};

/// Spans held in memory at most (the OpenTelemetry SDKs' default queue size).
const QUEUE_CAPACITY: usize = 2048;
/// How long the end of the run waits, beyond one request's timeout, for the last spans to go.
const FLUSH_SLACK: Duration = Duration::from_millis(500);

/// What the export did, for the run's summary.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Report {
    /// Where the spans were sent.
    pub endpoint: String,
    pub sent: u64,
    /// Spans that did not reach the collector: failed requests, spans dropped from a full queue,
    /// and spans still queued when the run ended.
    pub not_sent: u64,
    /// Of those, the spans dropped because the queue was full.
    pub dropped: u64,
    /// Why the last request failed.
    pub last_error: Option<String>,
}

/// The exporter of one drive.
pub(crate) struct LiveExport {
    config: LiveConfig,
    session: String,
    pipeline: String,
    builder: SpanBuilder,
    queue: Arc<Queue>,
    counts: Arc<Counts>,
    closing: Arc<Closing>,
    task: tokio::task::JoinHandle<()>,
}

impl LiveExport {
    /// Start the sender on `runtime` for session `session` of pipeline `pipeline`.
    pub(crate) fn start(
        config: LiveConfig,
        session: &str,
        pipeline: &str,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let queue = Arc::new(Queue::new(QUEUE_CAPACITY));
        let counts = Arc::new(Counts::default());
        let closing = Arc::new(Closing::default());
        let task = runtime.spawn(sender::run(
            config.clone(),
            Arc::clone(&queue),
            Arc::clone(&counts),
            Arc::clone(&closing),
        ));
        LiveExport {
            config,
            session: session.to_owned(),
            pipeline: pipeline.to_owned(),
            builder: SpanBuilder::default(),
            queue,
            counts,
            closing,
            task,
        }
    }

    /// An event the coordinator folded. The replay of a resumed session (`live` false) only
    /// teaches the builder which spans are open; what it closes was the earlier run's to send.
    pub(crate) fn observe(&mut self, event: &Event, state: &State, live: bool) {
        let closed = self.builder.push(event);
        if !live {
            return;
        }
        let mut spans: Vec<otlp::OtlpSpan> = closed
            .iter()
            .flat_map(|span| otlp::spans_of(&self.session, span))
            .collect();
        if event.kind == Kind::SessionEnd {
            let outcome = super::outcome_of(state);
            let end = self.builder.last_ms();
            spans.push(otlp::session_span(&SessionSummary {
                id: &self.session,
                pipeline: &self.pipeline,
                outcome: &outcome,
                events: state.events,
                start_ms: self.builder.first_ms().unwrap_or(end),
                end_ms: end,
            }));
        }
        self.queue.push(spans);
    }

    /// Send what is queued (bounded by one request's timeout and a little more), stop the sender
    /// and say what happened.
    pub(crate) async fn finish(mut self) -> Report {
        self.closing.close();
        let limit = self.config.timeout + FLUSH_SLACK;
        if tokio::time::timeout(limit, &mut self.task).await.is_err() {
            self.task.abort();
        }
        let dropped = self.queue.dropped();
        let failed = self.counts.failed.load(Ordering::SeqCst);
        let left = self.queue.len() as u64 + self.counts.in_flight.load(Ordering::SeqCst);
        Report {
            endpoint: self.config.url.clone(),
            sent: self.counts.sent.load(Ordering::SeqCst),
            not_sent: failed + dropped + left,
            dropped,
            last_error: self
                .counts
                .last_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}
