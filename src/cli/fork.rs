//! `crumb fork <session> --at <event-id>`: a new session from a point of another (its transcript
//! up to that event, its artifacts as they were then), driven on with possibly other bindings or
//! another mock scenario. Exit codes follow the fork's outcome, as `crumb run`'s do.

use crate::fs::stdout::outln;
use crate::runtime::freeze::FreezeSource;
use crate::runtime::session_read::compile_frozen_recording;
use std::sync::Arc;

use crate::adapters::mock::Scenario;
use crate::home::Project;
use crate::runtime::artifact_store::tree;
use crate::runtime::bindings::bind_flag::parse_binds;
use crate::runtime::coordinator::Session;
use crate::runtime::fork;
use crate::runtime::resolve::resolve;
use crate::runtime::run_config::RoleBinding;
use crate::runtime::session;
use crate::transcript::Kind;

use super::error::{CommandError, ExitStatus};

/// Arguments of `crumb fork`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session to fork: an id, a unique prefix of one, or a session folder.
    pub session: String,
    /// The last event the fork keeps: an event id or a unique prefix of one.
    #[arg(long, value_name = "EVENT")]
    pub at: String,
    /// Bind one role to another adapter from the fork point on (repeatable).
    #[arg(long = "bind", value_name = "ROLE=ADAPTER")]
    pub binds: Vec<String>,
    /// Change one of the parent's recorded inputs for the fork (repeatable): `--set rounds=3`.
    /// Checked against the pipeline's declarations; prompts rendered after the fork point see it.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// Make the mock adapter behave another way from the fork point on.
    #[arg(long, value_enum, value_name = "SCENARIO")]
    pub mock_scenario: Option<Scenario>,
    /// Fork even when some artifacts cannot be restored as they were (they are left out): only
    /// a session made before the artifact store, or one whose store was damaged, needs it.
    #[arg(long)]
    pub allow_missing: bool,
    #[command(flatten)]
    pub drive: super::run::DriveArgs,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let home = super::home_flag::resolve(args.drive.home.as_deref())?;
    let project = Project::current()
        .map_err(|e| CommandError::failure("cannot determine the project").because(e))?;
    let parent = resolve(&home, Some(&project), &args.session)?;
    // The parent as given cannot be forked: a usage error, whatever the library error's kind.
    let meta = parent.read_meta().map_err(CommandError::usage_from)?;
    let mut config = parent
        .run_config()
        .map_err(CommandError::usage_from)?
        .ok_or_else(|| CommandError::usage("the session has no readable session.start to fork"))?;
    let events = fork::prefix(&parent.transcript(), &args.at)?;
    let goal = events
        .iter()
        .find(|e| e.kind == Kind::Goal)
        .and_then(|e| e.body.clone())
        .unwrap_or_default();
    let roles: Vec<String> = config.bindings.keys().cloned().collect();
    let cwd = std::env::current_dir().ok();
    let binds = parse_binds(&args.binds, &roles, cwd.as_deref())?;
    for (role, bind) in binds {
        let mut binding = RoleBinding::to_adapter(bind.adapter, "--bind");
        binding.model = bind.model;
        binding.command = bind.command;
        config.bindings.insert(role, binding);
    }
    // The fork freezes the parent's frozen copy, the same bytes: its table is the parent's,
    // compiled once here for both the inputs and the freeze.
    let frozen_pipeline = parent.frozen_pipeline(&meta);
    let (table, read) = compile_frozen_recording(&frozen_pipeline)?;
    if !args.sets.is_empty() {
        config.inputs = super::run::inputs::resolve_over(&table.inputs, &config.inputs, &args.sets)
            .map_err(|problems| {
                CommandError::usage(format!("invalid inputs (nothing was started):\n{problems}"))
            })?;
    }
    if let Some(scenario) = args.mock_scenario {
        config.mock_scenario = Some(scenario.as_str().to_owned());
    }
    let prepared = session::prepare(
        &home,
        &project,
        FreezeSource {
            path: &frozen_pipeline,
            table: &table,
            read: &read,
        },
        &goal,
    )?;
    config.pipeline_hash.clone_from(&prepared.frozen.hash);
    config
        .pipeline_file
        .clone_from(&prepared.frozen.pipeline_file);
    let id = prepared.meta.session_id.clone();
    let text = fork::lines(&events, &id, parent.id(), &config).map_err(CommandError::failure)?;
    std::fs::write(prepared.building_path().join("transcript.jsonl"), text)
        .map_err(|e| CommandError::failure("cannot write the fork's transcript").because(e))?;
    let missing = tree::restore(
        parent.path(),
        prepared.building_path(),
        &tree::tree_of(&events),
    );
    for (path, why) in &missing {
        eprintln!("crumb fork: cannot restore {path} as it was at the fork point: {why}");
    }
    if !missing.is_empty() && !args.allow_missing {
        return Err(CommandError::usage(format!(
            "{} artifact(s) cannot be restored as they were; fork at an earlier event, or --allow-missing to go on without them",
            missing.len()
        )));
    }
    let created = prepared.commit(Vec::new())?;
    if !args.drive.json {
        outln!(
            "session  {} (fork of {} at {})",
            created.dir.id(),
            parent.id(),
            events.last().map_or("", |e| e.id.as_str())
        );
        outln!("folder   {}", created.dir.path().display());
    }
    let session = Session {
        dir: created.dir,
        table: Arc::new(table),
        config: Arc::new(config),
    };
    super::run::drive::drive_and_report(session, created.lock, &args.drive)
}
