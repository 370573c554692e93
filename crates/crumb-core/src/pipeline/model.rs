//! The pipeline file as written by people: the serde + schemars types that both parse the YAML
//! and generate `schemas/pipeline.schema.json`, so the schema can never drift from the parser.
//!
//! Values that need semantic checking (durations, sizes, globs) stay strings here; the compiler
//! parses them and reports failures with the location of the value.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocab::{Outcome, Severity, Verdict};

use crate::pipeline::choices::{CircuitAction, Guard};

/// A crumb pipeline: roles, QA checks, scoring, routes and limits.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "crumb pipeline")]
pub struct Pipeline {
    /// Format version of this file. Only `1` exists.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// Short machine name of the pipeline (letters, digits, `-`, `_`).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    pub name: String,
    /// One line saying what the pipeline turns into what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A base pipeline this file starts from (relative to this file): `roles`, `kinds` and
    /// `inputs` merge by name, every other key written here replaces the base's. Resolved
    /// before the rest of the file is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extends: Option<String>,
    /// Fragments (relative to this file) whose `roles`, `kinds` and `inputs` are added (a name
    /// defined twice is an error) and whose `routes` follow this file's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<OneOrMany<String>>,
    /// Typed parameters of a run (`crumb run --set name=value`, `--input file`), read in
    /// templates as `inputs.<name>`. `goal` is built in: always a string, filled by the pitch.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub inputs: IndexMap<String, crate::pipeline::inputs::InputDecl>,
    /// The agents of the pipeline, keyed by role id. A role id is what events carry in `from`.
    pub roles: IndexMap<String, Role>,
    /// The artifact kinds the roles exchange — vocabulary kinds or names of the pipeline's own
    /// (lower-case words joined by `.`) — and which fill the engine's plan and build slots.
    /// Omitted: `spec` and `spec.update` are the plan, `build` is the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds: Option<IndexMap<String, crate::pipeline::kinds::KindDecl>>,
    /// Deterministic execution QA run by the `run: qa` route action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qa: Option<Qa>,
    /// How a verifier's D1–D6 scores become a verdict, and which anti-deception guards apply.
    #[serde(default)]
    pub scoring: Scoring,
    /// Routing rules, tried in order; the first that matches an event fires.
    pub routes: Vec<Route>,
    /// Budgets and stop conditions.
    #[serde(default)]
    pub limits: Limits,
}

/// One agent role.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// Prompt template (minijinja, strict undefined), relative to this pipeline file.
    pub template: String,
    /// Event kinds that end this role's turn successfully. A turn that ends without one is a failure.
    pub produces: Vec<String>,
    /// Per-spawn timeouts.
    #[serde(default)]
    pub timeout: RoleTimeout,
    /// Event kinds this role's prompt context is built from (`goal` and routed feedback always
    /// are). Empty: everything public.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sees: Vec<String>,
    /// Adapters to swap to when this role's circuit breaker opens: the first entry at the first
    /// opening, the second at the next, and so on; when none is left the session stops.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<String>,
    /// What the role does, shown in Studio and `crumb graph`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The pipeline's own binding for this role: an adapter name, or `{ command: [argv…] }`.
    /// Presets, `.crumb/config.yaml` and the command line outrank it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<RoleAdapter>,
}

/// A role's default adapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RoleAdapter {
    /// `mock`, `claude-code`, `codex`, `gemini-cli` or `command` (which then needs an argv from
    /// a preset, the config or `--bind`).
    Name(String),
    /// The `command` adapter running this program.
    Command(CommandAdapter),
}

/// `{ command: [program, args…] }`: the `command` adapter with its argv.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandAdapter {
    /// The program and its arguments, never run through a shell. Elements containing `/` are
    /// paths relative to this pipeline file and must stay inside the project; a bare program
    /// name is looked up on `PATH`. `{prompt_file}`, `{session_dir}`, `{role}` and `{model}` are
    /// expanded.
    pub command: Vec<String>,
    /// Model name passed to the program (`CRUMB_MODEL`, `{model}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl RoleAdapter {
    /// The adapter name this declares.
    pub fn name(&self) -> &str {
        match self {
            RoleAdapter::Name(name) => name,
            RoleAdapter::Command(_) => "command",
        }
    }

    /// The declared argv (empty for a bare name).
    pub fn command(&self) -> &[String] {
        match self {
            RoleAdapter::Name(_) => &[],
            RoleAdapter::Command(command) => &command.command,
        }
    }
}

/// Wall-clock and idle limits of one spawn.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleTimeout {
    /// Longest a spawn may run, e.g. `30m`.
    #[serde(default = "default_wall")]
    pub wall: String,
    /// Longest a spawn may stay silent (no output), e.g. `5m`.
    #[serde(default = "default_idle")]
    pub idle: String,
}

impl Default for RoleTimeout {
    fn default() -> Self {
        Self {
            wall: default_wall(),
            idle: default_idle(),
        }
    }
}

fn default_wall() -> String {
    "30m".into()
}
fn default_idle() -> String {
    "5m".into()
}

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

/// Scoring rubric and thresholds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    /// The dimensions a judge scores, in order. Omitted: D1–D6, each 0–5, weight 1 (out of 30),
    /// with the listed `guards` deciding which of their properties apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<Vec<crate::pipeline::rubric::DimensionDecl>>,
    /// Aggregate (Σ weight × score over the rubric) at or above which the verdict is PASS.
    #[serde(default = "default_pass_at")]
    pub pass_at: f64,
    /// Aggregate at or above which the verdict is PARTIAL; below it is FAIL.
    #[serde(default = "default_partial_at")]
    pub partial_at: f64,
    /// Anti-deception guards applied to every `judge.score`. Omitted: all five, except that a
    /// pipeline without `qa:` leaves out the two that need a QA run (`pass_requires_qa`,
    /// `exec_from_qa`), which could only ever turn its verdicts into failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Vec<Guard>>,
}

impl Scoring {
    /// The guards that apply: the listed ones, else the default for a pipeline with or without
    /// `qa:` (see [`Scoring::guards`]).
    pub(crate) fn guards_for(&self, has_qa: bool) -> Vec<Guard> {
        match &self.guards {
            Some(listed) => listed.clone(),
            None => default_guards()
                .into_iter()
                .filter(|g| has_qa || !g.needs_qa())
                .collect(),
        }
    }
}

impl Default for Scoring {
    fn default() -> Self {
        Self {
            rubric: None,
            pass_at: default_pass_at(),
            partial_at: default_partial_at(),
            guards: None,
        }
    }
}

fn default_pass_at() -> f64 {
    24.0
}
fn default_partial_at() -> f64 {
    18.0
}
fn default_guards() -> Vec<Guard> {
    vec![
        Guard::PassRequiresQa,
        Guard::ExecFromQa,
        Guard::AcFailureCapsSpecFit,
        Guard::ReworkCapsConvergence,
        Guard::SameProviderDiscount,
    ]
}

/// One routing rule: when an event matches `on` (and `from`/`when`), do exactly one action.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Event kind to match, `verdict` for the corrected verdict of a `judge.score`, or `qa.error`
    /// for a `qa.result` whose checks could not run (after `qa.retry` is spent).
    pub on: String,
    /// Only events from this role (or actor) match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Verdict conditions; only with `on: verdict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// Spawn this role, or several at once (`spawn: [judge-a, judge-b]`): a fan-out that a later
    /// `join:` route collects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn: Option<OneOrMany<String>>,
    /// Collect the branches of the latest fan-out (`on:` their kind, `judge.score`): fire once
    /// `all` reported, on the first (`any`), or once `{ quorum: n }` did. Needs `combine:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<crate::pipeline::choices::JoinMode>,
    /// How a join combines its branches' corrected verdicts into the one the verdict routes see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combine: Option<crate::pipeline::choices::Combine>,
    /// Run a built-in step. Only `qa` exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunStep>,
    /// End the session with this outcome: `pass`, `fail`, `partial` or `rejected`, or
    /// `{ outcome: <word>, reason: <snake_case word> }` to also name the reason recorded in `done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<DoneSpec>,
    /// Wait for a person (`/approve` or `/veto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#await: Option<AwaitWho>,
    /// What the spawned role is given besides the usual context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<With>,
    /// Most times this route may fire in one session; one more stops it with
    /// `route_budget:<route>`. Every loop that neither a verdict, a re-plan nor a person bounds
    /// needs one, so no pipeline can loop forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max: Option<u32>,
}

/// Verdict conditions of a route.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// One verdict or a list; absent means any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<OneOrMany<Verdict>>,
    /// One severity or a list; absent means any. A verdict without a declared severity counts as `Important`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<OneOrMany<Severity>>,
}

/// A single value or a list of values.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "OneOrMany_{T}")]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// Built-in steps a route can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStep {
    /// The pipeline's `qa:` checks.
    Qa,
}

/// A terminal route's declared outcome. The exit code follows the outcome, never the reason.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum DoneSpec {
    /// An outcome word alone (`done: pass`); any other word is a validation error.
    Word(#[schemars(schema_with = "declarable_outcome")] String),
    /// The outcome and the reason the `done` event records.
    Full {
        /// `pass`, `fail`, `partial` or `rejected`: what the exit code follows.
        #[schemars(schema_with = "declarable_outcome")]
        outcome: Outcome,
        /// A `snake_case` word; defaults to `verdict_pass` for `pass`, else the outcome word.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// The outcomes a `done:` may declare, as the schema states them: `stopped` is the engine's own
/// (budgets, limits, breakers), so the schema refuses it as `validate` does.
fn declarable_outcome(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": Outcome::DECLARABLE.map(Outcome::as_str),
        "description": "`pass`, `fail`, `partial` or `rejected`: what the exit code follows.",
    })
}

impl DoneSpec {
    /// The outcome and the reason, when the outcome is declarable (`None` for an unknown word).
    pub fn resolve(&self) -> Option<(Outcome, String)> {
        let (outcome, reason) = match self {
            DoneSpec::Word(word) => (Outcome::parse(word)?, None),
            DoneSpec::Full { outcome, reason } => (*outcome, reason.clone()),
        };
        if outcome == Outcome::Stopped {
            return None;
        }
        let reason = reason
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| default_reason(outcome).to_owned());
        Some((outcome, reason))
    }
}

/// The reason a `done:` records when it names none: `verdict_pass` for pass (what transcripts
/// have always said), else the outcome word.
pub(crate) fn default_reason(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "verdict_pass",
        other => other.as_str(),
    }
}

/// Who a route waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AwaitWho {
    /// A person, through Studio or `crumb say`.
    Human,
}

/// Extra context handed to a spawned role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum With {
    /// The verifier's feedback and suggested change, for the next spawn only.
    Feedback,
}

/// Budgets and stop conditions.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Most re-plans (specs after the first) before stopping with `too_many_respec`; checked
    /// before spawning a spec-writing role, so no turn is spent past it.
    #[serde(default = "default_max_respec")]
    pub max_respec: u32,
    /// Most `judge.score` events (from any judging role) before stopping with `too_many_verify`;
    /// checked before a repair or a judging role is spawned.
    #[schemars(range(min = 1))]
    #[serde(default = "default_max_verify")]
    pub max_verify: u32,
    /// Token budget over all spawns.
    #[serde(default = "default_tokens")]
    pub tokens: Budget<u64>,
    /// Wall-clock budget of the session, e.g. `{ warn: 50m, hard: 60m }`.
    #[serde(default = "default_wall_clock")]
    pub wall_clock: Budget<String>,
    /// Consecutive failures without progress before the session is reported stuck.
    #[schemars(range(min = 1))]
    #[serde(default = "default_stuck")]
    pub stuck_after_errors: u32,
    /// Per-role circuit breaker.
    #[serde(default)]
    pub circuit: Circuit,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_respec: default_max_respec(),
            max_verify: default_max_verify(),
            tokens: default_tokens(),
            wall_clock: default_wall_clock(),
            stuck_after_errors: default_stuck(),
            circuit: Circuit::default(),
        }
    }
}

fn default_max_respec() -> u32 {
    3
}
fn default_max_verify() -> u32 {
    5
}
fn default_tokens() -> Budget<u64> {
    Budget {
        warn: 250_000,
        hard: 300_000,
    }
}
fn default_wall_clock() -> Budget<String> {
    Budget {
        warn: "50m".into(),
        hard: "60m".into(),
    }
}
fn default_stuck() -> u32 {
    5
}

/// A soft warning threshold and a hard stop.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Budget_{T}")]
pub struct Budget<T> {
    /// Crossing this records a warning once.
    pub warn: T,
    /// Reaching this stops the session: no turn starts once the total is at or past it. Never
    /// zero.
    #[schemars(range(min = 1))]
    pub hard: T,
}

/// Circuit breaker settings.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Circuit {
    /// Consecutive failed spawns of a role that open its circuit.
    #[schemars(range(min = 1))]
    #[serde(default = "default_open_after")]
    pub open_after: u32,
    /// What an open circuit does: `swap` to the role's next `fallback` adapter (in order, one per
    /// opening; stop when none is left), or `stop`.
    #[serde(default)]
    pub then: CircuitAction,
}

impl Default for Circuit {
    fn default() -> Self {
        Self {
            open_after: default_open_after(),
            then: CircuitAction::Swap,
        }
    }
}

fn default_open_after() -> u32 {
    3
}
