//! The pipeline file as written by people: the serde + schemars types that both parse the YAML
//! and generate `schemas/pipeline.schema.json`, so the schema can never drift from the parser.
//!
//! Values that need semantic checking (durations, sizes, globs) stay strings here; the compiler
//! parses them and reports failures with the location of the value.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod limits;
mod qa;
mod routes;
mod scoring;

pub use limits::*;
pub use qa::*;
pub use routes::*;
pub use scoring::*;

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
