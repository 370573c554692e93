//! The `qa:` block: execution checks on the artifacts, in the browser and out of it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The QA block: an entry point and the checks to run against the artifacts.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Qa {
    /// Bound on the whole QA run, e.g. `120s`. On timeout everything is killed and a failing result is written.
    #[serde(default = "default_qa_timeout")]
    pub timeout: String,
    /// The artifact to open, relative to the session's `artifacts/` folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The checks, run in order.
    pub checks: Vec<Check>,
    /// How often a run that could not check anything (no browser, a launch or page timeout under
    /// load) is tried again before the `qa.error` route (default: wait for a person) decides.
    #[serde(default)]
    pub retry: QaRetry,
}

fn default_qa_timeout() -> String {
    "120s".into()
}

/// Retries of a QA run that could not run. The machine, not the build, was at fault, so a retry
/// is never counted as a verification or a repair.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QaRetry {
    /// Retries after the first attempt (0: none). Each waits `backoff` × 4^(n−1): 1s, 4s, 16s…
    #[serde(default = "default_qa_retry_max")]
    #[schemars(range(max = 10))]
    pub max: u32,
    /// Wait before the first retry, e.g. `1s`.
    #[serde(default = "default_qa_retry_backoff")]
    pub backoff: String,
}

impl Default for QaRetry {
    fn default() -> Self {
        Self {
            max: default_qa_retry_max(),
            backoff: default_qa_retry_backoff(),
        }
    }
}

fn default_qa_retry_max() -> u32 {
    2
}
fn default_qa_retry_backoff() -> String {
    "1s".into()
}

/// One QA check. `id` names it in results; `kind` selects what it does.
///
/// Every kind repeats the common fields (`id`, `blocking`, `timeout`) instead of flattening
/// them in: serde cannot deny unknown keys through `flatten`, and a draft-07 schema cannot say
/// `additionalProperties: false` across a flattened `oneOf`. Use the accessors for the common
/// fields.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// A file exists under `artifacts/`, optionally within a size range.
    File {
        /// Name of the check in `qa.result` (unique within the pipeline).
        id: String,
        /// Whether a failure of this check fails QA (`exec_exit_code != 0`).
        #[serde(default = "yes")]
        blocking: bool,
        /// Per-check timeout overriding `qa.timeout`, e.g. `30s`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
        /// Path relative to `artifacts/`.
        path: String,
        /// Smallest acceptable size, e.g. `1KB`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_size: Option<String>,
        /// Largest acceptable size, e.g. `2MB`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_size: Option<String>,
    },
    /// The files matching a glob add up to at most `limit` bytes.
    MaxBytes {
        /// Name of the check in `qa.result` (unique within the pipeline).
        id: String,
        /// Whether a failure of this check fails QA (`exec_exit_code != 0`).
        #[serde(default = "yes")]
        blocking: bool,
        /// Per-check timeout overriding `qa.timeout`, e.g. `30s`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
        /// Glob relative to `artifacts/` (`*` does not cross `/`; use `**`).
        glob: String,
        /// Size limit, e.g. `5MB`.
        limit: String,
    },
    /// An HTML file parses and has a doctype, a viewport meta tag and at least one script.
    Html {
        /// Name of the check in `qa.result` (unique within the pipeline).
        id: String,
        /// Whether a failure of this check fails QA (`exec_exit_code != 0`).
        #[serde(default = "yes")]
        blocking: bool,
        /// Per-check timeout overriding `qa.timeout`, e.g. `30s`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
        /// Path relative to `artifacts/`.
        path: String,
    },
    /// Runs a program; passes when it exits with `expect_exit`.
    Command {
        /// Name of the check in `qa.result` (unique within the pipeline).
        id: String,
        /// Whether a failure of this check fails QA (`exec_exit_code != 0`).
        #[serde(default = "yes")]
        blocking: bool,
        /// Per-check timeout overriding `qa.timeout`, e.g. `30s`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
        /// Program and arguments (no shell).
        argv: Vec<String>,
        /// Working directory relative to `artifacts/`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// Extra environment variables.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        /// Exit code that means success.
        #[serde(default)]
        expect_exit: i32,
    },
    /// Opens the entry in headless Chromium and watches what happens.
    Browser {
        /// Name of the check in `qa.result` (unique within the pipeline).
        id: String,
        /// Whether a failure of this check fails QA (`exec_exit_code != 0`).
        #[serde(default = "yes")]
        blocking: bool,
        /// Per-check timeout overriding `qa.timeout`, e.g. `30s`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
        /// CSS selector that must appear.
        #[serde(default = "default_wait_for")]
        wait_for: String,
        /// Time to let the page run after the selector appears, e.g. `1500ms`.
        #[serde(default = "default_settle")]
        settle: String,
        /// Signals that fail the check.
        #[serde(default = "default_fail_on")]
        fail_on: Vec<BrowserSignal>,
        /// Keys to press after the selector appears (e.g. `Space`, `ArrowLeft`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        keys: Vec<String>,
        /// Points to click, in CSS pixels of the viewport.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        clicks: Vec<Point>,
        /// Save a screenshot under `qa/` and reference it as an artifact.
        #[serde(default = "yes")]
        screenshot: bool,
        /// Fail when the canvas stays one colour.
        #[serde(default = "yes")]
        require_non_blank: bool,
    },
    /// Runs the JavaScript acceptance predicates the planner put in the `spec` event.
    AcPredicates {
        /// Name of the check in `qa.result` (unique within the pipeline).
        id: String,
        /// Whether a failure of this check fails QA (`exec_exit_code != 0`).
        #[serde(default = "yes")]
        blocking: bool,
        /// Per-check timeout overriding `qa.timeout`, e.g. `30s`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
    },
}

impl Check {
    /// The check's `id`.
    pub fn id(&self) -> &str {
        match self {
            Check::File { id, .. }
            | Check::MaxBytes { id, .. }
            | Check::Html { id, .. }
            | Check::Command { id, .. }
            | Check::Browser { id, .. }
            | Check::AcPredicates { id, .. } => id,
        }
    }

    /// Whether a failure fails QA.
    pub fn blocking(&self) -> bool {
        match self {
            Check::File { blocking, .. }
            | Check::MaxBytes { blocking, .. }
            | Check::Html { blocking, .. }
            | Check::Command { blocking, .. }
            | Check::Browser { blocking, .. }
            | Check::AcPredicates { blocking, .. } => *blocking,
        }
    }

    /// The per-check timeout as written.
    pub fn timeout(&self) -> Option<&str> {
        match self {
            Check::File { timeout, .. }
            | Check::MaxBytes { timeout, .. }
            | Check::Html { timeout, .. }
            | Check::Command { timeout, .. }
            | Check::Browser { timeout, .. }
            | Check::AcPredicates { timeout, .. } => timeout.as_deref(),
        }
    }
}

fn yes() -> bool {
    true
}

fn default_wait_for() -> String {
    "canvas".into()
}
fn default_settle() -> String {
    "1500ms".into()
}
fn default_fail_on() -> Vec<BrowserSignal> {
    vec![
        BrowserSignal::ConsoleError,
        BrowserSignal::PageError,
        BrowserSignal::FailedRequest,
    ]
}

/// A signal the browser check can observe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BrowserSignal {
    /// `console.error` was called.
    ConsoleError,
    /// An uncaught exception or unhandled rejection.
    PageError,
    /// A request failed or answered 4xx/5xx.
    FailedRequest,
    /// A request to a host other than the loopback artifact server was blocked.
    BlockedRequest,
}

/// A point in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Horizontal position.
    pub x: f64,
    /// Vertical position.
    pub y: f64,
}
