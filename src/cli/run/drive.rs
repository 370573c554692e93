//! A session driven to its end: `meta.json` kept up to date around the drive, the progress
//! shown, the summary printed, and the outcome's exit code returned. Shared by `crumb run`,
//! `crumb resume` and `crumb fork`.

use crate::fs::stdout::outln;
use serde_json::json;

use super::args::DriveArgs;
use super::progress::Progress;
use super::summary;
use crate::cli::error::{CommandError, ExitStatus};
use crate::runtime::coordinator::{self, Options, Session};
use crate::runtime::lock::CoordinatorLock;
use crate::runtime::meta::{MetaError, SessionStatus};
use crate::runtime::run_config::Ending;

/// Drive a session (new or resumed) to its end, update `meta.json`, print the summary and return
/// the outcome's exit code.
pub(crate) fn drive_and_report(
    session: Session,
    lock: CoordinatorLock,
    flags: &DriveArgs,
) -> Result<ExitStatus, CommandError> {
    let (wait, json) = (flags.wait, flags.json);
    let dir = session.dir.clone();
    let inputs = session.config.inputs.clone();
    let mut meta = dir.read_meta()?;
    meta.set_status(SessionStatus::Running, Some(std::process::id()));
    dir.write_meta(&meta).map_err(|e| storage(&dir, &e))?;
    let mut progress = Progress::new(json, session.config.limits.tokens_hard, &session.table);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CommandError::failure("cannot start the async runtime").because(e))?;
    let mut live = super::telemetry::start(
        flags.otlp_endpoint.as_deref(),
        dir.id(),
        &session.table.name,
        runtime.handle(),
        &mut progress,
    );
    let shutdown = crate::cli::signals::interrupted();
    let outcome = runtime.block_on(coordinator::drive(
        session,
        Options { wait },
        &mut super::telemetry::Observed {
            progress: &mut progress,
            live: live.as_mut(),
        },
        shutdown,
    ));
    progress.finish();
    let otlp = live.map(|export| runtime.block_on(export.finish()));
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(err) => {
            meta.set_status(SessionStatus::Error, None);
            let _ = dir.write_meta(&meta);
            lock.release();
            return Err(CommandError::failure_from(err));
        }
    };
    let status = match outcome.ending {
        Ending::Awaiting => SessionStatus::Awaiting,
        // Not an ending: no coordinator holds it, and `crumb resume` picks it up.
        Ending::Interrupted => SessionStatus::Running,
        Ending::Done { .. } => SessionStatus::Done,
    };
    meta.set_status(status, None);
    if let Err(err) = dir.write_meta(&meta) {
        // The outcome is in the transcript; `crumb resume` reports it and rewrites meta.
        lock.release();
        return Err(storage(&dir, &err));
    }
    lock.release();
    let mut summary = summary::of(&dir, &outcome);
    summary["inputs"] = json!(inputs);
    summary["otlp"] = json!(otlp);
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary).unwrap_or_default()
        );
    } else {
        summary::print(&summary);
    }
    Ok(ExitStatus::outcome(outcome.ending.exit_code()))
}

/// A `meta.json` write that failed around a drive, said as every storage fault is (the cause,
/// the free space, the `crumb resume` to run).
fn storage(dir: &crate::runtime::session_dir::SessionDir, err: &MetaError) -> CommandError {
    CommandError::failure_from(coordinator::StorageFault::at(dir, err))
}
