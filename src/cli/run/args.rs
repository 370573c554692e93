//! `crumb run`'s arguments as clap reads them: the "low" arguments, nothing resolved yet (the
//! plan resolves them, once).

use std::path::PathBuf;

use crate::adapters::mock::Scenario;

const EXIT_HELP: &str = "Exit codes follow the outcome the pipeline declares: 0 pass, 20 fail (also a pass refused for want of QA or resting on the mock), 21 partial, 22 rejected, 23 stopped (budget, limit, circuit breaker, idle); 10 awaiting a person (`crumb say <id> /approve` then `crumb resume <id>`), 130 interrupted, 3 invalid pipeline, 2 usage or configuration error, 1 internal error.";

/// Arguments of `crumb run`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_HELP)]
pub struct Args {
    /// The pipeline file (e.g. `pipelines/casual.yaml`).
    pub pipeline: PathBuf,
    /// The goal (for `casual`, the game pitch); `-` reads it from stdin. Required unless the
    /// pipeline declares a default for its `goal` input.
    #[arg(conflicts_with = "pitch_file")]
    pub pitch: Option<String>,
    /// Read the goal from this file (for a goal too long or too awkward to quote).
    #[arg(long, value_name = "PATH")]
    pub pitch_file: Option<PathBuf>,
    /// Set one of the pipeline's declared inputs (repeatable): `--set audience=engineers`.
    /// Checked against its type; wins over `--input`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// Read inputs from a YAML or JSON mapping (`audience: engineers`).
    #[arg(long = "input", value_name = "PATH")]
    pub input_file: Option<PathBuf>,
    /// Run every role on this adapter (mock, claude-code, codex, gemini-cli, command).
    #[arg(long, value_name = "ADAPTER")]
    pub adapter: Option<String>,
    /// Bind one role to an adapter (repeatable): `--bind builder=codex`.
    #[arg(long = "bind", value_name = "ROLE=ADAPTER")]
    pub binds: Vec<String>,
    /// A preset from `presets/<NAME>.yaml`.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Make the mock adapter misbehave on purpose.
    #[arg(long, value_enum, value_name = "SCENARIO")]
    pub mock_scenario: Option<Scenario>,
    #[command(flatten)]
    pub drive: DriveArgs,
    /// Override every role's idle timeout (e.g. `2s`, `500ms`).
    #[arg(long, value_name = "DURATION", env = "CRUMB_IDLE_TIMEOUT")]
    pub idle_timeout: Option<String>,
    /// Override every role's wall-clock timeout (e.g. `10m`).
    #[arg(long, value_name = "DURATION", env = "CRUMB_WALL_TIMEOUT")]
    pub wall_timeout: Option<String>,
    /// Start a fresh session even when a session for the same pipeline and pitch was left
    /// behind by a coordinator that died (by default that session is resumed).
    #[arg(long)]
    pub new: bool,
    /// Run in the background and show the session in `crumb watch`'s terminal view (quitting the
    /// view leaves the run going).
    #[arg(long, conflicts_with = "json")]
    pub watch: bool,
    #[command(flatten)]
    pub dry: DryRunArgs,
}

/// How a driven session ends and reports, and where sessions live: the same flags for
/// `crumb run`, `crumb resume` and `crumb fork`.
#[derive(Debug, clap::Args)]
pub struct DriveArgs {
    /// Keep a session that waits for a person open (instead of exiting 10).
    #[arg(long)]
    pub wait: bool,
    /// Print the final summary as JSON (and no progress).
    #[arg(long)]
    pub json: bool,
    /// The crumb home (default `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Send the session's spans to this OpenTelemetry collector while it runs (OTLP/HTTP JSON to
    /// `URL/v1/traces`); wins over `OTEL_EXPORTER_OTLP_ENDPOINT`.
    #[arg(long, value_name = "URL", value_parser = crate::export::live::config::endpoint_arg)]
    pub otlp_endpoint: Option<String>,
}

/// The dry-run flags of `crumb run`.
#[derive(Debug, clap::Args)]
pub struct DryRunArgs {
    /// Play the pipeline without an agent: each turn writes a placeholder of its `produces`, QA
    /// passes and verdicts follow `--script`. The session is marked and never a pass of the work.
    #[arg(long)]
    pub dry_run: bool,
    /// The dry run's verdicts and answers, in order: `FAIL:Critical,FAIL:Important,PASS`
    /// (also `QA:FAIL`, `QA:ERROR`, `APPROVE`, `VETO`, `REDO`).
    #[arg(
        long,
        value_name = "ENTRIES",
        requires = "dry_run",
        conflicts_with = "script_file"
    )]
    pub script: Option<String>,
    /// The dry run's script as a YAML list of entries.
    #[arg(long, value_name = "PATH", requires = "dry_run")]
    pub script_file: Option<PathBuf>,
}
