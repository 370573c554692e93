//! The background task that posts queued spans to the collector: a batch when spans have waited
//! [`BATCH_DELAY`] or [`MAX_BATCH`] are ready, at once when the run is finishing. Each request
//! has a short timeout and is tried once; a batch that fails is counted, never retried, so a
//! collector that is down or slow costs the run nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::config::LiveConfig;
use super::queue::Queue;
use crate::export::otlp::{OtlpSpan, request_of};

/// How long spans wait for company before a batch is sent.
pub(crate) const BATCH_DELAY: Duration = Duration::from_millis(500);
/// The most spans in one request (the OpenTelemetry SDKs' default batch size).
pub(crate) const MAX_BATCH: usize = 512;

/// What the sender has done, read by the run's summary.
#[derive(Default)]
pub(crate) struct Counts {
    pub sent: AtomicU64,
    pub failed: AtomicU64,
    /// Spans of the request in flight.
    pub in_flight: AtomicU64,
    /// The last failure, in words.
    pub last_error: std::sync::Mutex<Option<String>>,
}

/// Set once the run is over: send what is queued without waiting, then stop.
#[derive(Default)]
pub(crate) struct Closing {
    set: AtomicBool,
    wake: Notify,
}

impl Closing {
    pub(crate) fn close(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }
}

/// Post batches until closed and drained.
pub(crate) async fn run(
    config: LiveConfig,
    queue: Arc<Queue>,
    counts: Arc<Counts>,
    closing: Arc<Closing>,
) {
    let client = match reqwest::Client::builder()
        .timeout(config.timeout)
        .connect_timeout(config.timeout)
        .no_proxy()
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            note(&counts, format!("cannot build the HTTP client: {err}"));
            return;
        }
    };
    loop {
        if queue.len() == 0 {
            if closing.is_set() {
                return;
            }
            tokio::select! {
                () = queue.ready.notified() => {}
                () = closing.wake.notified() => {}
            }
            continue;
        }
        if !closing.is_set() && queue.len() < MAX_BATCH {
            tokio::select! {
                () = tokio::time::sleep(BATCH_DELAY) => {}
                () = closing.wake.notified() => {}
            }
        }
        let batch = queue.take(MAX_BATCH);
        let n = batch.len() as u64;
        counts.in_flight.store(n, Ordering::SeqCst);
        match post(&client, &config, batch).await {
            Ok(Accepted { rejected: 0, .. }) => {
                counts.sent.fetch_add(n, Ordering::SeqCst);
            }
            Ok(Accepted { rejected, message }) => {
                let rejected = rejected.min(n);
                note(
                    &counts,
                    format!("the collector rejected {rejected} spans: {message}"),
                );
                counts.sent.fetch_add(n - rejected, Ordering::SeqCst);
                counts.failed.fetch_add(rejected, Ordering::SeqCst);
            }
            Err(why) => {
                note(&counts, why);
                counts.failed.fetch_add(n, Ordering::SeqCst);
            }
        }
        counts.in_flight.store(0, Ordering::SeqCst);
    }
}

fn note(counts: &Counts, why: String) {
    *counts
        .last_error
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
}

/// The largest answer read (an `ExportTraceServiceResponse` is a few bytes).
const MAX_ANSWER: usize = 64 * 1024;

/// A 2xx answer, with the spans its `partialSuccess` says were rejected.
struct Accepted {
    rejected: u64,
    message: String,
}

/// One `ExportTraceServiceRequest` as OTLP/HTTP JSON; a 2xx answer means the collector took it,
/// but for the spans its `partialSuccess` rejects.
async fn post(
    client: &reqwest::Client,
    config: &LiveConfig,
    spans: Vec<OtlpSpan>,
) -> Result<Accepted, String> {
    let body = serde_json::to_vec(&request_of(&config.service, spans))
        .map_err(|e| format!("cannot encode the spans: {e}"))?;
    let mut request = client
        .post(&config.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    for (key, value) in &config.headers {
        request = request.header(key.as_str(), value.as_str());
    }
    let mut response = request.send().await.map_err(|e| describe(&e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the collector answered {status}"));
    }
    let mut answer = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        answer.extend_from_slice(&chunk);
        if answer.len() > MAX_ANSWER {
            break;
        }
    }
    Ok(partial_success(&answer))
}

/// `partialSuccess.rejectedSpans` (an int64: a string in the protobuf JSON mapping, a number from
/// some servers) and its `errorMessage`; nothing rejected when the answer says nothing.
fn partial_success(answer: &[u8]) -> Accepted {
    let partial = serde_json::from_slice::<serde_json::Value>(answer)
        .ok()
        .and_then(|v| v.get("partialSuccess").cloned())
        .unwrap_or_default();
    let rejected = match partial.get("rejectedSpans") {
        Some(serde_json::Value::String(n)) => n.parse().unwrap_or(0),
        Some(n) => n.as_u64().unwrap_or(0),
        None => 0,
    };
    Accepted {
        rejected,
        message: partial
            .get("errorMessage")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("no reason given")
            .to_owned(),
    }
}

fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "the collector did not answer in time".to_owned()
    } else if err.is_connect() {
        "cannot connect to the collector".to_owned()
    } else {
        format!("the request failed: {err}")
    }
}

#[cfg(test)]
mod tests {
    use super::partial_success;

    #[test]
    fn a_partial_success_counts_its_rejected_spans() {
        let answer = br#"{"partialSuccess":{"rejectedSpans":"2","errorMessage":"too old"}}"#;
        let accepted = partial_success(answer);
        assert_eq!(
            (accepted.rejected, accepted.message.as_str()),
            (2, "too old")
        );
        assert_eq!(
            partial_success(br#"{"partialSuccess":{"rejectedSpans":3}}"#).rejected,
            3
        );
        for whole in [&b"{}"[..], b"", b"not json", br#"{"partialSuccess":{}}"#] {
            assert_eq!(partial_success(whole).rejected, 0);
        }
    }
}
