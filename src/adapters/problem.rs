//! What a CLI said went wrong, in classes a person (and the engine) can act on: the words and
//! HTTP statuses every CLI and the APIs behind it use, read into a [`Problem`] by the stream
//! parsers. Below both the turn summary (which carries the problem) and the diagnosis (which
//! turns a summary and an outcome into a failure), so neither reaches up to the other.

use std::fmt;

use serde::Serialize;

use crate::process::LineFlow;

/// The kind of failure a turn ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// Not logged in, a rejected key.
    Auth,
    /// A rate limit or an exhausted quota / billing.
    Quota,
    /// The model API cannot be reached.
    Network,
    /// The prompt is larger than the CLI or model accepts.
    InputTooLarge,
    /// The model API answered with an error (overloaded, invalid request, server error).
    Model,
    /// The CLI ran but the turn broke the protocol: no `produces`, no end-of-turn event.
    Protocol,
    /// A wall-clock or no-progress timeout.
    Timeout,
    /// The CLI crashed or exited for a reason it did not state.
    Crash,
}

impl FailureClass {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureClass::Auth => "auth",
            FailureClass::Quota => "quota",
            FailureClass::Network => "network",
            FailureClass::InputTooLarge => "input_too_large",
            FailureClass::Model => "model",
            FailureClass::Protocol => "protocol",
            FailureClass::Timeout => "timeout",
            FailureClass::Crash => "crash",
        }
    }

    /// Whether another try (or another adapter of the same kind) could succeed.
    pub(crate) fn retryable(self) -> bool {
        !matches!(
            self,
            FailureClass::Auth | FailureClass::InputTooLarge | FailureClass::Network
        )
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a CLI itself said went wrong, as its stream or stderr put it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The class the CLI's own error code implies, when it gave one.
    pub class: Option<FailureClass>,
    /// The CLI's words, whole (bounded only by [`MAX_WORDS`]).
    pub words: String,
}

/// Longest CLI message kept (far above any real one; a bound against a hostile stream).
pub(crate) const MAX_WORDS: usize = 2000;

impl Problem {
    pub fn new(class: Option<FailureClass>, words: &str) -> Self {
        Problem {
            class: class.or_else(|| class_of_text(words)),
            words: words.trim().chars().take(MAX_WORDS).collect(),
        }
    }
}

/// Retry notices of one class after which a turn is given up: a network that stayed down or a
/// rate limit that stayed on through this many of the CLI's own retries (its backoff would
/// otherwise run for minutes; crumb's retries and fallbacks take over, visibly).
pub(crate) const MAX_RETRY_NOTICES: u32 = 2;

/// Counts a CLI's retry notices and says when to stop waiting for them.
#[derive(Debug, Default, Clone)]
pub(crate) struct RetryNotices {
    network: u32,
    quota: u32,
}

impl RetryNotices {
    /// How a retry notice whose cause is `class` counts: auth and input-too-large end the turn
    /// now (no retry fixes them), network and quota after [`MAX_RETRY_NOTICES`], anything else is
    /// chatter.
    pub(crate) fn notice(&mut self, class: Option<FailureClass>) -> LineFlow {
        let count = match class {
            Some(FailureClass::Auth | FailureClass::InputTooLarge) => return LineFlow::GiveUp,
            Some(FailureClass::Network) => &mut self.network,
            Some(FailureClass::Quota) => &mut self.quota,
            _ => return LineFlow::Chatter,
        };
        *count += 1;
        if *count >= MAX_RETRY_NOTICES {
            LineFlow::GiveUp
        } else {
            LineFlow::Chatter
        }
    }
}

/// The class a CLI's error text implies, from words all three CLIs (and the HTTP APIs behind
/// them) use. Auth is checked first: a 401 is auth even when the text also says "retrying".
pub(crate) fn class_of_text(text: &str) -> Option<FailureClass> {
    let text = text.to_lowercase();
    // A needle of digits is an HTTP status: it must stand alone (not part of a token count).
    let any = |needles: &[&str]| {
        needles.iter().any(|needle| {
            if needle.bytes().all(|b| b.is_ascii_digit()) {
                has_number(&text, needle)
            } else {
                text.contains(needle)
            }
        })
    };
    if any(&[
        "not logged in",
        "invalid api key",
        "invalid_api_key",
        "invalid x-api-key",
        "authentication",
        "unauthorized",
        "401",
        "please set an auth method",
        "api key not valid",
        "api_key_invalid",
        "/login",
    ]) {
        Some(FailureClass::Auth)
    } else if any(&[
        "input_too_large",
        "input too large",
        "context window",
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "request too large",
        "413",
    ]) {
        Some(FailureClass::InputTooLarge)
    } else if any(&[
        "429",
        "rate limit",
        "rate_limit",
        "quota",
        "billing",
        "resource_exhausted",
        "credit balance",
        "usage limit",
    ]) {
        Some(FailureClass::Quota)
    } else if any(&[
        "waiting for network",
        "connection refused",
        "econnrefused",
        "enotfound",
        "error sending request",
        "network",
        "connection error",
        "fetch failed",
        "dns error",
        "could not resolve",
    ]) {
        Some(FailureClass::Network)
    } else if any(&[
        "overloaded",
        "server_error",
        "internal server error",
        "invalid_request",
        "bad request",
        "500",
        "503",
        "529",
    ]) {
        Some(FailureClass::Model)
    } else {
        None
    }
}

/// Whether `number` occurs in `text` as a number of its own: not inside a word or an id (letters
/// or digits right before or after it, as in a ULID's `…X401K…`), and not a part of a larger
/// number (`58.401` in a timestamp, `1,429`). A separator at the end of a sentence is fine.
fn has_number(text: &str, number: &str) -> bool {
    let joins = |mark: Option<char>, next: Option<char>| {
        mark.is_some_and(|c| c.is_ascii_alphanumeric())
            || (mark.is_some_and(|c| matches!(c, '.' | ',' | ':'))
                && next.is_some_and(|c| c.is_ascii_digit()))
    };
    text.match_indices(number).any(|(at, _)| {
        let mut before = text[..at].chars().rev();
        let mut after = text[at + number.len()..].chars();
        let (b1, b2) = (before.next(), before.next());
        let (a1, a2) = (after.next(), after.next());
        !joins(b1, b2) && !joins(a1, a2)
    })
}
