//! `crumb run --dry-run`: play a pipeline without an agent. A real session is created and its
//! transcript written, but every turn, QA run and answer of a person comes from `--script`
//! ([`crate::engine::explore::play`]), played through the real reducer. The session is marked as
//! a dry run in `session.start` and in its `done` (`data.dry_run: true`), always finished (so
//! `crumb resume` never runs real agents on it), and the summary says so: a dry run is never a
//! pass of the work.

use crate::fs::stdout::outln;
use std::path::Path;

use serde_json::{Value, json};

use super::args::DryRunArgs;
use super::plan::Plan;
use crate::cli::error::{CommandError, ExitStatus};
use crate::engine::explore::play::{self, Ending};
use crate::engine::explore::script::{self, Entry};
use crate::engine::explore::world::{Point, World};
use crate::engine::explore::{StepLabel, summarise};
use crate::engine::state::State;
use crate::runtime::meta::SessionStatus;
use crate::runtime::run_config::RunConfig;
use crate::runtime::session;
use crate::transcript::writer::Writer;
use crate::transcript::{Draft, Event, Kind};

/// Most bytes of a `--script-file`.
const MAX_SCRIPT_BYTES: u64 = 64 * 1024;

/// The script from `--script` or `--script-file` (a YAML list of entries).
fn script(args: &DryRunArgs) -> Result<Vec<Entry>, CommandError> {
    if let Some(path) = &args.script_file {
        let bytes = crate::fs::bounded_read::read(path, MAX_SCRIPT_BYTES)
            .map_err(|e| CommandError::usage(format!("--script-file {}: {e}", path.display())))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            CommandError::usage(format!("--script-file {}: not UTF-8", path.display()))
        })?;
        return script::parse_yaml(&text)
            .map_err(|e| CommandError::usage(format!("--script-file {}: {e}", path.display())));
    }
    script::parse(args.script.as_deref().unwrap_or(""))
        .map_err(|e| CommandError::usage(format!("--script: {e}")))
}

/// Create the session, play it by the script, finish it and print the route.
pub(crate) fn run(plan: &Plan, args: &DryRunArgs, json: bool) -> Result<ExitStatus, CommandError> {
    let (table, pitch, inputs) = (&plan.table, plan.pitch.as_str(), &plan.inputs);
    let entries = script(args)?;
    let prepared = session::prepare(&plan.home, &plan.project, plan.freeze_source(), pitch)?;
    let config = RunConfig {
        pipeline: table.name.clone(),
        pipeline_hash: prepared.frozen.hash.clone(),
        pipeline_file: prepared.frozen.pipeline_file.clone(),
        bindings: indexmap::IndexMap::new(),
        limits: table.limits.clone(),
        mock_scenario: None,
        idle_timeout_ms: None,
        wall_timeout_ms: None,
        inputs: inputs.clone(),
        prices: None,
    };
    let mut header = super::open::header_drafts(&prepared.meta.session_id, &config, pitch)?;
    if let Some(data) = header[0].data.as_mut() {
        data.insert("dry_run".into(), json!(true));
        data.insert(
            "script".into(),
            json!(entries.iter().map(ToString::to_string).collect::<Vec<_>>()),
        );
    }
    let created = prepared.commit(header)?;
    let dir = created.dir.clone();
    let written = read_events(&dir.transcript())?;
    let mut writer =
        Writer::open(dir.transcript(), dir.id()).map_err(CommandError::failure_from)?;
    let mut stamp = |draft: Draft, _: &State| -> Result<Event, String> {
        writer.append(draft).map_err(|e| e.to_string())
    };
    let world = World::new(table);
    let mut point = Point {
        state: State::new(),
        pending: Vec::new(),
    };
    let started = world
        .fold_events(&mut point, written, Vec::new(), &mut stamp)
        .map_err(CommandError::failure)?;
    let first = StepLabel {
        choice: "goal".to_owned(),
        then: summarise(&started, false, point.state.awaiting.is_some()),
    };
    let mut played =
        play::play(&world, point, &entries, &mut stamp).map_err(CommandError::failure)?;
    played.steps.insert(0, first.line());
    // A script that ran out or did not fit is the request as given: a usage error after the route.
    let (outcome, reason, script_failed) = match &played.ending {
        Ending::Done(outcome, reason) => (outcome.as_str(), reason.clone(), false),
        Ending::Awaiting => ("stopped", "dry_run:awaiting_person".to_owned(), false),
        Ending::Idle => ("stopped", "dry_run:idle".to_owned(), false),
        Ending::ScriptEnded { .. } => ("stopped", "dry_run:script_ended".to_owned(), true),
        Ending::Mismatch { .. } => ("stopped", "dry_run:script_mismatch".to_owned(), true),
    };
    let code = if script_failed {
        crate::exit_codes::USAGE_ERROR
    } else {
        crate::exit_codes::SUCCESS
    };
    let why = match &played.ending {
        Ending::Done(..) => format!("the route ends {outcome} ({reason})"),
        Ending::Awaiting => "the route waits for a person and the script has no answer".to_owned(),
        Ending::Idle => "nothing runs, nothing is pending and no person is asked".to_owned(),
        Ending::ScriptEnded { role } => {
            format!("{role} judges next and the script has no verdict left")
        }
        Ending::Mismatch { expected, found } => format!("expected {expected}, found `{found}`"),
    };
    let done = Draft::new("system", Kind::Done)
        .body(format!("dry run: {why}"))
        .data(object(json!({
            "outcome": outcome, "reason": reason, "dry_run": true,
        })));
    let end = Draft::new("system", Kind::SessionEnd).body("dry run finished");
    writer
        .append_all(vec![done, end])
        .map_err(CommandError::failure_from)?;
    let mut meta = created.meta;
    meta.set_status(SessionStatus::Done, None);
    dir.write_meta(&meta)?;
    created.lock.release();

    print_summary(json, &dir, &played, (outcome, &reason, &why), code, inputs);
    if script_failed {
        return Err(CommandError::usage(format!("dry run: {why}")));
    }
    Ok(ExitStatus::SUCCESS)
}

/// The route played, as JSON or as lines that say it is a dry run.
fn print_summary(
    json: bool,
    dir: &crate::runtime::session_dir::SessionDir,
    played: &play::Played,
    (outcome, reason, why): (&str, &str, &str),
    code: u8,
    inputs: &indexmap::IndexMap<String, Value>,
) {
    if json {
        let summary = json!({
            "dry_run": true,
            "session_id": dir.id(),
            "folder": dir.path(),
            "outcome": outcome,
            "reason": reason,
            "why": why,
            "steps": played.steps,
            "unused_script_entries": played.unused,
            "exit_code": code,
            "inputs": inputs,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary).unwrap_or_default()
        );
    } else {
        outln!(
            "session  {} (DRY RUN: no agent ran, nothing was checked)",
            dir.id()
        );
        outln!("folder   {}", dir.path().display());
        for line in super::inputs::lines(inputs) {
            outln!("input    {line}");
        }
        for step in &played.steps {
            outln!("  {step}");
        }
        outln!("DRY RUN  {why}; this is the route, not a result of the work");
        if played.unused > 0 {
            outln!("script   {} entries were not used", played.unused);
        }
    }
}

/// The events the dry run wrote, through the one line framer; crumb wrote every line itself, so
/// any line that is not a whole event is a failure, not something to skip.
fn read_events(path: &Path) -> Result<Vec<Event>, CommandError> {
    let file = std::fs::File::open(path).map_err(CommandError::failure_from)?;
    crate::transcript::reader::Reader::new(std::io::BufReader::new(file))
        .map(|line| line.map_err(|issue| CommandError::failure(issue.to_string())))
        .collect()
}

fn object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}
