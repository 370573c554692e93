//! The bounded queue between the coordinator, which adds spans as turns end, and the sender:
//! adding never waits and never grows memory past the bound; when the collector cannot keep up
//! the oldest spans are dropped and counted.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

use crate::export::otlp::OtlpSpan;

/// Spans waiting to be sent.
pub(crate) struct Queue {
    spans: Mutex<VecDeque<OtlpSpan>>,
    capacity: usize,
    dropped: AtomicU64,
    /// Woken when spans are added (a permit is kept when the sender is busy).
    pub ready: Notify,
}

impl Queue {
    pub(crate) fn new(capacity: usize) -> Self {
        Queue {
            spans: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            dropped: AtomicU64::new(0),
            ready: Notify::new(),
        }
    }

    /// Add `spans`, dropping the oldest beyond the capacity.
    pub(crate) fn push(&self, spans: Vec<OtlpSpan>) {
        if spans.is_empty() {
            return;
        }
        {
            let mut queue = self
                .spans
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            queue.extend(spans);
            let over = queue.len().saturating_sub(self.capacity);
            if over > 0 {
                queue.drain(..over);
                self.dropped.fetch_add(over as u64, Ordering::Relaxed);
            }
        }
        self.ready.notify_one();
    }

    /// Up to `max` of the oldest spans.
    pub(crate) fn take(&self, max: usize) -> Vec<OtlpSpan> {
        let mut queue = self
            .spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = queue.len().min(max);
        queue.drain(..n).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Spans dropped because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::spans::{Span, SpanKind};

    fn spans(n: usize) -> Vec<OtlpSpan> {
        (0..n)
            .map(|i| {
                let span = Span {
                    kind: SpanKind::Qa,
                    track: "qa".into(),
                    name: "qa".into(),
                    event_id: format!("e{i}"),
                    start_ms: 0,
                    end_ms: 1,
                    status: "pass".into(),
                    tokens_in: None,
                    tokens_out: None,
                    cache_read: None,
                    cache_write: None,
                    reasoning: None,
                    cost_usd: None,
                    requested_model: None,
                    model: None,
                    provider: None,
                    harness: None,
                    tools: Vec::new(),
                };
                crate::export::otlp::spans_of("s", &span).remove(0)
            })
            .collect()
    }

    #[test]
    fn a_full_queue_drops_the_oldest_and_counts_them() {
        let queue = Queue::new(3);
        queue.push(spans(2));
        queue.push(spans(4));
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.dropped(), 3);
        assert_eq!(queue.take(2).len(), 2);
        assert_eq!(queue.take(10).len(), 1);
        assert_eq!(queue.take(10).len(), 0);
    }
}
