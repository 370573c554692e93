//! Watching a page: console errors, uncaught exceptions, failed and blocked requests, dialogs.
//!
//! Listeners are attached before navigation so nothing early is missed. Each stream is drained by
//! its own task into a shared [`Signals`]; dialogs are accepted at once because an `alert()`
//! would otherwise freeze the page. A request to anything but our loopback origin is "blocked":
//! the browser's flags make it fail, and this is where it gets reported.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived,
    EventWebSocketCreated,
};
use chromiumoxide::cdp::browser_protocol::page::{
    EventJavascriptDialogOpening, HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EventConsoleApiCalled, EventExceptionThrown, RemoteObject,
};
use futures::StreamExt;
use serde::Serialize;
use tokio::task::JoinHandle;

/// Most entries kept per signal.
const MAX_ENTRIES: usize = 50;
/// Longest message kept.
const MAX_MESSAGE: usize = 500;

/// What a page did that QA cares about.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub(crate) struct Signals {
    pub console_errors: Vec<String>,
    pub page_errors: Vec<String>,
    pub failed_requests: Vec<String>,
    pub blocked_requests: Vec<String>,
    pub dialogs: Vec<String>,
}

struct Shared {
    signals: Signals,
    urls: HashMap<String, String>,
    reported: std::collections::HashSet<String>,
    /// Load failures whose request was not seen yet (request id → error text). Each CDP event kind
    /// is drained by its own task, so a failure can arrive before the request it belongs to; it is
    /// judged once the request's URL is known, or reported without one at the end.
    pending_failures: HashMap<String, String>,
    /// Requests sent and not yet finished or failed: the settle is not idle while any is.
    in_flight: HashSet<String>,
    /// Requests that ended before their `requestWillBeSent` was drained (see `pending_failures`).
    ended_early: HashSet<String>,
    /// When the page last did something QA watches (a request, a signal): the settle's quiet
    /// window counts from here.
    last_activity: Instant,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            signals: Signals::default(),
            urls: HashMap::new(),
            reported: HashSet::new(),
            pending_failures: HashMap::new(),
            in_flight: HashSet::new(),
            ended_early: HashSet::new(),
            last_activity: Instant::now(),
        }
    }
}

impl Shared {
    /// A request ended (finished or failed): it is no longer in flight.
    fn request_ended(&mut self, id: &str) {
        self.last_activity = Instant::now();
        if !self.in_flight.remove(id) {
            self.ended_early.insert(id.to_owned());
        }
    }

    /// A request was sent: remember its URL, report it if it leaves our origin, and judge a load
    /// failure that arrived before it.
    fn request_sent(&mut self, id: String, url: String, origin: &str) {
        self.last_activity = Instant::now();
        if !self.ended_early.remove(&id) {
            self.in_flight.insert(id.clone());
        }
        if is_foreign(&url, origin) && self.reported.insert(url.clone()) {
            push(&mut self.signals.blocked_requests, &url);
        }
        if let Some(error) = self.pending_failures.remove(&id) {
            self.load_failed(id.clone(), &error, &url, origin);
        }
        self.urls.insert(id, url);
    }

    /// A load failed; judged now if its request was seen, else when it is.
    fn failure_seen(&mut self, id: String, error: &str, origin: &str) {
        self.request_ended(&id);
        match self.urls.get(&id).cloned() {
            Some(url) => self.load_failed(id, error, &url, origin),
            None => {
                self.pending_failures.insert(id, error.to_owned());
            }
        }
    }

    /// The signals, with load failures whose request never showed up reported without a URL.
    fn signals(&self) -> Signals {
        let mut signals = self.signals.clone();
        let mut unmatched: Vec<&String> = self.pending_failures.values().collect();
        unmatched.sort();
        for error in unmatched {
            push(
                &mut signals.failed_requests,
                format!("{error} (request not seen)"),
            );
        }
        signals
    }

    /// Record a failed load of a request whose URL is known.
    fn load_failed(&mut self, id: String, error: &str, url: &str, origin: &str) {
        if is_foreign(url, origin) || self.reported.contains(&id) {
            // Foreign requests were reported when they were attempted; a 4xx was reported with its
            // status.
            return;
        }
        self.reported.insert(id);
        push(
            &mut self.signals.failed_requests,
            format!("{error} {}", short_url(url)),
        );
    }
}

/// Listener tasks for one page; they stop when this is dropped.
pub(crate) struct Watch {
    shared: Arc<Mutex<Shared>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Watch {
    /// Attach every listener to `page`, whose documents are served from `origin`.
    #[allow(
        clippy::too_many_lines,
        reason = "one short listener per event kind, all sharing the same state; splitting scatters it"
    )]
    pub(crate) async fn attach(
        page: &Page,
        origin: &str,
    ) -> Result<Watch, chromiumoxide::error::CdpError> {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let mut tasks = Vec::new();
        let origin = origin.to_owned();

        let mut console = page.event_listener::<EventConsoleApiCalled>().await?;
        let s = Arc::clone(&shared);
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = console.next().await {
                if ev.r#type == ConsoleApiCalledType::Error {
                    let text = ev
                        .args
                        .iter()
                        .map(remote_text)
                        .collect::<Vec<_>>()
                        .join(" ");
                    let mut g = lock(&s);
                    g.last_activity = Instant::now();
                    push(&mut g.signals.console_errors, text);
                }
            }
        }));

        let mut exceptions = page.event_listener::<EventExceptionThrown>().await?;
        let s = Arc::clone(&shared);
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = exceptions.next().await {
                let d = &ev.exception_details;
                let what = d
                    .exception
                    .as_ref()
                    .and_then(|e| e.description.clone())
                    .unwrap_or_else(|| d.text.clone());
                let first_line = what.lines().next().unwrap_or_default().to_owned();
                let at = d.url.as_deref().map(|u| {
                    format!(
                        " at {}:{}:{}",
                        short_url(u),
                        d.line_number + 1,
                        d.column_number + 1
                    )
                });
                let mut g = lock(&s);
                g.last_activity = Instant::now();
                push(
                    &mut g.signals.page_errors,
                    format!("{}{}", first_line, at.unwrap_or_default()),
                );
            }
        }));

        let mut requests = page.event_listener::<EventRequestWillBeSent>().await?;
        let s = Arc::clone(&shared);
        let o = origin.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = requests.next().await {
                lock(&s).request_sent(ev.request_id.inner().clone(), ev.request.url.clone(), &o);
            }
        }));

        let mut responses = page.event_listener::<EventResponseReceived>().await?;
        let s = Arc::clone(&shared);
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = responses.next().await {
                if ev.response.status >= 400 {
                    let mut g = lock(&s);
                    g.reported.insert(ev.request_id.inner().clone());
                    let line = format!("{} {}", ev.response.status, short_url(&ev.response.url));
                    push(&mut g.signals.failed_requests, line);
                }
            }
        }));

        let mut failures = page.event_listener::<EventLoadingFailed>().await?;
        let s = Arc::clone(&shared);
        let o = origin.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = failures.next().await {
                if ev.canceled == Some(true) {
                    // A cancelled load is the page's own choice.
                    continue;
                }
                lock(&s).failure_seen(ev.request_id.inner().clone(), &ev.error_text, &o);
            }
        }));

        let mut finished = page.event_listener::<EventLoadingFinished>().await?;
        let s = Arc::clone(&shared);
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = finished.next().await {
                lock(&s).request_ended(ev.request_id.inner());
            }
        }));

        let mut sockets = page.event_listener::<EventWebSocketCreated>().await?;
        let s = Arc::clone(&shared);
        let o = origin.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = sockets.next().await {
                let mut g = lock(&s);
                if is_foreign(&ev.url, &o) && g.reported.insert(ev.url.clone()) {
                    push(&mut g.signals.blocked_requests, ev.url.clone());
                }
            }
        }));

        let mut dialogs = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await?;
        let s = Arc::clone(&shared);
        let dialog_page = page.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = dialogs.next().await {
                push(
                    &mut lock(&s).signals.dialogs,
                    format!("{:?}: {}", ev.r#type, ev.message),
                );
                let _ = dialog_page
                    .execute(HandleJavaScriptDialogParams::new(true))
                    .await;
            }
        }));

        Ok(Watch { shared, tasks })
    }

    /// What has been seen so far.
    pub(crate) fn snapshot(&self) -> Signals {
        lock(&self.shared).signals()
    }

    /// Whether no request is in flight, and for how long nothing watched has happened.
    pub(crate) fn activity(&self) -> (bool, std::time::Duration) {
        let g = lock(&self.shared);
        (g.in_flight.is_empty(), g.last_activity.elapsed())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn lock(shared: &Arc<Mutex<Shared>>) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn push(list: &mut Vec<String>, text: impl AsRef<str>) {
    if list.len() < MAX_ENTRIES {
        list.push(clip(text.as_ref()));
    }
}

fn clip(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn remote_text(obj: &RemoteObject) -> String {
    match (&obj.value, &obj.description) {
        (Some(serde_json::Value::String(s)), _) => s.clone(),
        (Some(v), _) => v.to_string(),
        (None, Some(d)) => d.clone(),
        (None, None) => format!("{:?}", obj.r#type),
    }
}

/// Whether `url` leaves our origin for the network (data:, blob: and about: stay in the page).
pub(crate) fn is_foreign(url: &str, origin: &str) -> bool {
    let local_scheme = ["data:", "blob:", "about:", "chrome-error:", "javascript:"]
        .iter()
        .any(|s| url.starts_with(s));
    if local_scheme || url.is_empty() {
        return false;
    }
    !(url == origin || url.starts_with(&format!("{origin}/")))
}

/// The path part of a URL on our origin (ports change between runs; paths do not).
fn short_url(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("http://127.0.0.1:")
        && let Some(slash) = rest.find('/')
    {
        return rest[slash..].to_owned();
    }
    url.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "http://127.0.0.1:4000";

    /// CDP events of different kinds are drained by different tasks, so a load failure can be
    /// handled before the request it belongs to: the outcome must not depend on that order.
    #[test]
    fn a_load_failure_is_judged_the_same_whichever_event_comes_first() {
        let cases = [
            (
                "https://tracker.example.com/collect",
                "net::ERR_NAME_NOT_RESOLVED",
            ),
            ("http://127.0.0.1:4000/game/engine.js", "net::ERR_FAILED"),
        ];
        for (url, error) in cases {
            let mut request_first = Shared::default();
            request_first.request_sent("1".into(), url.into(), ORIGIN);
            request_first.failure_seen("1".into(), error, ORIGIN);
            let mut failure_first = Shared::default();
            failure_first.failure_seen("1".into(), error, ORIGIN);
            failure_first.request_sent("1".into(), url.into(), ORIGIN);
            assert_eq!(request_first.signals(), failure_first.signals(), "{url}");
        }
        let mut foreign = Shared::default();
        foreign.failure_seen("7".into(), "net::ERR_FAILED", ORIGIN);
        foreign.request_sent("7".into(), "http://203.0.113.7/p.gif".into(), ORIGIN);
        let signals = foreign.signals();
        assert_eq!(signals.blocked_requests, ["http://203.0.113.7/p.gif"]);
        assert!(signals.failed_requests.is_empty(), "{signals:?}");
    }

    #[test]
    fn a_failure_whose_request_never_shows_up_is_still_reported() {
        let mut shared = Shared::default();
        shared.failure_seen("9".into(), "net::ERR_FAILED", ORIGIN);
        assert_eq!(
            shared.signals().failed_requests,
            ["net::ERR_FAILED (request not seen)"]
        );
    }

    #[test]
    fn only_our_origin_is_local() {
        let o = "http://127.0.0.1:4000";
        assert!(!is_foreign("http://127.0.0.1:4000/game/index.html", o));
        assert!(!is_foreign("data:image/png;base64,xx", o));
        assert!(is_foreign("http://127.0.0.1:4001/x", o));
        assert!(is_foreign("http://127.0.0.1:40000/x", o));
        assert!(is_foreign("https://cdn.example.com/lib.js", o));
        assert!(is_foreign("ws://tracker.invalid/", o));
        assert_eq!(short_url("http://127.0.0.1:4000/game/a.js"), "/game/a.js");
    }
}
