//! Command-line interface: one file per command. Exit codes are a documented API: the named codes
//! of [`crate::exit_codes`], listed in `docs/cli.md`.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use error::{CommandError, ExitStatus};

pub(crate) mod batch;
pub(crate) mod check;
pub(crate) mod copy_artifacts;
pub(crate) mod diff;
pub(crate) mod doctor;
pub(crate) mod error;
pub(crate) mod event;
pub mod explain;
pub(crate) mod export;
#[cfg(test)]
mod export_identical;
pub(crate) mod fork;
pub(crate) mod graph;
mod home_flag;
pub(crate) mod init;
mod init_editors;
pub(crate) mod ls;
pub(crate) mod lsp;
pub(crate) mod mcp;
mod mcp_hosts;
pub(crate) mod mock_agent;
mod pipeline_file;
pub mod qa;
pub(crate) mod release;
pub(crate) mod replay;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod say;
pub mod schema;
pub(crate) mod signals;
pub(crate) mod status;
pub(crate) mod status_usage;
mod stdout;
pub(crate) mod studio;
pub(crate) mod tail;
pub(crate) mod turn_shim;
pub mod validate;
pub(crate) mod versions;
pub(crate) mod versions_ref;
pub(crate) mod watch;
pub(crate) mod why;

/// crumb — a declarative pipeline runner.
#[derive(Debug, Parser)]
#[command(name = "crumb", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline on a goal: `crumb run pipelines/casual.yaml "60-second match-3"`.
    Run(run::Args),
    /// Run many pitches of one pipeline, each its own session, and summarise them.
    Batch(batch::Args),
    /// Start a new session from any event of another, driven on with other bindings if asked.
    Fork(fork::Args),
    /// Why a session ended or what it waits for: the route, guards, budgets, failed turns, QA.
    Why(why::Args),
    /// Freeze a point of a session as a named version of the project, with a manifest.
    Release(release::Args),
    /// List the project's released versions.
    Versions(versions::Args),
    /// Copy a version's (or a session's) whole tree into a folder, every sha256 verified.
    CopyArtifacts(copy_artifacts::Args),
    /// The files that changed between two points of a session, or two versions.
    Diff(diff::Args),
    /// Take over a stopped or waiting session and drive it on.
    Resume(resume::Args),
    /// The mock adapter's agent process (run by the dispatcher, not by people).
    #[command(hide = true)]
    MockAgent(mock_agent::Args),
    #[command(hide = true)]
    TurnShim(turn_shim::Args),
    /// Validate pipeline files (exit 0 clean, 3 invalid, 2 usage error).
    Validate(validate::Args),
    /// Prove a pipeline's route: every outcome reachable, no dead end, every loop bounded.
    Check(check::Args),
    /// Start a project from a shipped pipeline: templates, schema, editor settings, CI.
    Init(init::Args),
    /// Print a JSON Schema (`pipeline` or `transcript`).
    Schema(schema::Args),
    /// Explain a diagnostic code or an event kind.
    Explain(explain::Args),
    /// Write a session as a self-contained HTML report, a Chrome trace, OTLP JSON or Markdown.
    Export(export::Args),
    /// Print a pipeline's compiled transition table as a graph.
    Graph(graph::Args),
    /// Append one event (JSON on stdin) for the agent turn holding `CRUMB_CAPABILITY`.
    Event(event::Args),
    /// Fold a transcript through the reducer and print the final state.
    Replay(replay::Args),
    /// Show a session's progress, last events and scorecard.
    Status(status::Args),
    /// Run a pipeline's QA checks on a folder of artifacts and print the result.
    Qa(qa::Args),
    /// List sessions.
    Ls(ls::Args),
    /// Serve the local web console over the sessions' transcripts.
    Studio(studio::Args),
    /// Print a session's events (human lines or its JSONL), following them with `--follow`.
    Tail(tail::Args),
    /// A terminal view of a session: outcome, rounds, feed, scorecard; keys to approve, veto, stop.
    Watch(watch::Args),
    /// Append a line to a session's inbox (`/approve`, `@builder …`, plain text).
    Say(say::Args),
    /// Serve the Model Context Protocol on stdio for Claude Code, Codex or Gemini CLI.
    Mcp(mcp::Args),
    /// Serve the Language Server Protocol on stdio: pipeline diagnostics, hover, completion in an editor.
    Lsp(lsp::Args),
    /// Check this machine: agent CLIs and their logins, Chromium, the crumb home, limits.
    Doctor(doctor::Args),
}

/// Entry point used by `main`: the one place that prints a command's error and exits.
pub fn main() -> ExitCode {
    run::timings::mark_start();
    // The subcommand's name as clap knows it starts every message (`crumb <name>: …`).
    let parsed = Cli::command().try_get_matches().and_then(|mut matches| {
        let name = matches.subcommand_name().unwrap_or_default().to_owned();
        // Formatted against the command, as `Parser::try_parse` does.
        let cli =
            Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut Cli::command()))?;
        Ok((cli, name))
    });
    let (cli, name) = match parsed {
        Ok(parsed) => parsed,
        Err(err) => {
            let _ = err.print();
            // --help and --version print to stdout and succeed; anything else is a usage error.
            return crate::exit_codes::exit(if err.use_stderr() {
                crate::exit_codes::USAGE_ERROR
            } else {
                crate::exit_codes::SUCCESS
            });
        }
    };
    let result: Result<ExitStatus, CommandError> = match &cli.command {
        Command::Run(args) => run::run(args),
        Command::Batch(args) => batch::run(args),
        Command::Fork(args) => fork::run(args),
        Command::Why(args) => why::run(args),
        Command::Release(args) => release::run(args),
        Command::Versions(args) => versions::run(args),
        Command::CopyArtifacts(args) => copy_artifacts::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Resume(args) => resume::run(args),
        // The mock agent is a process of its own (the dispatcher's child) with its own exit.
        Command::MockAgent(args) => return mock_agent::run(args),
        Command::TurnShim(args) => return turn_shim::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Check(args) => check::run(args),
        Command::Init(args) => init::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Export(args) => export::run(args),
        Command::Graph(args) => graph::run(args),
        Command::Event(args) => event::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Status(args) => status::run(args),
        Command::Qa(args) => qa::run(args),
        Command::Ls(args) => ls::run(args),
        Command::Say(args) => say::run(args),
        Command::Tail(args) => tail::run(args),
        Command::Watch(args) => watch::run(args),
        Command::Studio(args) => studio::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Lsp(args) => lsp::run(args),
    };
    // A command whose stdout could not be written says so, whatever it answered (`fs::stdout`).
    let result = result.and_then(|status| match crate::fs::stdout::failure() {
        Some(cause) => Err(CommandError::failure(format!(
            "cannot write stdout ({cause}); what the command did is done, only its output is lost"
        ))),
        None => Ok(status),
    });
    match result {
        Ok(status) => crate::exit_codes::exit(status.code()),
        Err(error) => {
            eprint!("{}", error.render(&name));
            crate::exit_codes::exit(error.exit_code())
        }
    }
}
