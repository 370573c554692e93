//! `crumb batch <pipeline> <pitches-file>`: run many pitches, each its own session, and summarise
//! them (human, `--json`, `--csv`); `--emit k8s` writes the same batch as a Kubernetes Indexed Job
//! and `--collect <home>` summarises what its pods wrote. Exit 0 when every session passed, else
//! `BATCH_NOT_ALL_PASSED`.

use crate::fs::stdout::{out, outln};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{CommandError, ExitStatus};
use crate::batch::attempt::Attempt;
use crate::batch::record::{BatchDir, BatchFile, batch_id};
use crate::batch::summary::{self, Row};
use crate::batch::{collect, k8s, plan, run};
use crate::exit_codes::{BATCH_NOT_ALL_PASSED, FAILURE, INVALID_PIPELINE, USAGE_ERROR};
use crate::pipeline::compile::CompileOptions;
use crate::pipeline::units::parse_duration_ms;

/// Arguments of `crumb batch`.
#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools)]
pub struct Args {
    /// The pipeline every pitch runs.
    #[arg(required_unless_present = "collect")]
    pub pipeline: Option<PathBuf>,
    /// One pitch per line, or a YAML list of pitches or `{ pitch, bind: [ROLE=ADAPTER] }`.
    #[arg(required_unless_present = "collect")]
    pub pitches: Option<PathBuf>,
    /// How many sessions run at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// Every role on this adapter (as `crumb run --adapter`).
    #[arg(long, value_name = "ADAPTER")]
    pub adapter: Option<String>,
    /// Bind one role for every pitch (repeatable; a pitch's own `bind:` comes after).
    #[arg(long = "bind", value_name = "ROLE=ADAPTER")]
    pub binds: Vec<String>,
    /// A preset from `presets/<NAME>.yaml`.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Make the mock adapter misbehave on purpose.
    #[arg(long, value_name = "SCENARIO")]
    pub mock_scenario: Option<String>,
    /// Start no more sessions once the ended ones used this many tokens together.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Start nothing after this long and stop (resumably) what still runs, e.g. `30m`.
    #[arg(long, value_name = "DURATION")]
    pub max_wall: Option<String>,
    /// Print the summary as JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the summary as CSV.
    #[arg(long)]
    pub csv: bool,
    /// The crumb home (default `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Write the batch as Kubernetes manifests on stdout: `k8s` a `ConfigMap` and an Indexed Job,
    /// `k8s-collect` the pod that runs `--collect` over the shared home once the Job is done.
    #[arg(long, value_name = "FORMAT", value_parser = ["k8s", "k8s-collect"])]
    pub emit: Option<String>,
    /// `--emit k8s`: the container image holding crumb and this project.
    #[arg(long, default_value = "crumb:latest")]
    pub image: String,
    /// `--emit k8s`: the `ReadWriteMany` volume claim holding the shared crumb home.
    #[arg(long, default_value = "crumb-home")]
    pub claim: String,
    /// `--emit k8s`: the project folder inside the image (the pods' working directory).
    #[arg(long, default_value = "/project")]
    pub workdir: String,
    /// `--emit k8s`: retries of one pitch's pod before its index counts as failed.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries_per_index: u32,
    /// `--emit k8s`: fail the whole Job once more than N pitches failed (default: never, so
    /// every other pitch still runs).
    #[arg(long, value_name = "N")]
    pub max_failed_indexes: Option<usize>,
    /// `--emit k8s`: CPU each pod requests and is limited to.
    #[arg(long, value_name = "QUANTITY", default_value = "1")]
    pub cpu: String,
    /// `--emit k8s`: memory each pod requests and is limited to.
    #[arg(long, value_name = "QUANTITY", default_value = "2Gi")]
    pub memory: String,
    /// `--emit k8s`: a Secret whose keys become the pods' environment (agent API keys).
    #[arg(long, value_name = "NAME")]
    pub secret: Option<String>,
    /// Run only the pitch at this index (what each pod of the Indexed Job does). The exit status
    /// then says whether crumb drove the pitch (0 whatever the session's outcome), not the
    /// outcome: an ended session is a result, not a pod failure.
    #[arg(long, value_name = "I", conflicts_with_all = ["emit", "collect"])]
    pub index: Option<usize>,
    /// Summarise the sessions a batch's pods wrote into this crumb home instead of running.
    #[arg(long, value_name = "HOME")]
    pub collect: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    if let Some(home) = &args.collect {
        return collect_home(args, home);
    }
    let (Some(pipeline), Some(pitches_file)) = (&args.pipeline, &args.pitches) else {
        return Err(CommandError::usage("give a pipeline and a pitches file"));
    };
    if let Some(index) = args.index {
        return pod(args, pipeline, pitches_file, index);
    }
    // Checked here so an invalid pipeline is one error, not one per pitch.
    let table = super::pipeline_file::compile_or_report(pipeline, CompileOptions::default())?;
    let pitches = plan::read(pitches_file).map_err(CommandError::usage_from)?;
    // Every pitch's inputs get `crumb run`'s own checks before any child starts.
    for (i, pitch) in pitches.iter().enumerate() {
        check_inputs(&table, i, pitch)?;
    }
    let canonical = canonical(pipeline)?;
    let id = batch_id(&canonical, &pitches);
    let run_args = run_args(args);
    if args.emit.is_some() {
        return emit_k8s(args, pipeline, &pitches, &id, &run_args);
    }
    let max_wall = args
        .max_wall
        .as_deref()
        .map(|text| {
            parse_duration_ms(text)
                .map(Duration::from_millis)
                .map_err(|e| CommandError::usage(format!("--max-wall {text}: {e}")))
        })
        .transpose()?;
    let home = home(args)?;
    let batch = BatchFile {
        id,
        pipeline: canonical,
        pitches,
    };
    let dir = BatchDir::create(&home, &batch)
        .map_err(|e| CommandError::failure("cannot write the batch folder").because(e))?;
    let quiet = args.json || args.csv;
    if !quiet {
        outln!(
            "batch    {} ({} pitches, {} at once)",
            batch.id,
            batch.pitches.len(),
            args.jobs
        );
        outln!("folder   {}", dir.path().display());
    }
    let options = run::Options {
        home,
        jobs: usize::from(args.jobs),
        run_args,
        max_tokens: args.max_tokens,
        max_wall,
        only: None,
        plain: !std::io::stderr().is_terminal(),
        quiet,
    };
    let rows = run::run(&dir, &batch, &options).map_err(CommandError::failure)?;
    report(args, &rows)?;
    Ok(all_passed(&rows))
}

fn check_inputs(
    table: &crate::pipeline::table::TransitionTable,
    i: usize,
    pitch: &plan::Pitch,
) -> Result<(), CommandError> {
    super::run::inputs::resolve(&table.inputs, &pitch.set, None).map_err(|problems| {
        CommandError::usage(format!(
            "pitch {} ({}): invalid inputs:\n{problems}",
            i + 1,
            pitch.pitch
        ))
    })?;
    Ok(())
}

fn canonical(pipeline: &Path) -> Result<PathBuf, CommandError> {
    pipeline
        .canonicalize()
        .map_err(|e| CommandError::usage(format!("{}: {e}", pipeline.display())))
}

fn home(args: &Args) -> Result<PathBuf, CommandError> {
    let home = super::home_flag::resolve(args.home.as_deref()).map_err(|_| {
        CommandError::usage("no crumb home: set CRUMB_HOME or HOME, or pass --home")
    })?;
    Ok(home.root().to_path_buf())
}

/// `--index I`: one pod of the Indexed Job. Its attempt is recorded in the batch folder before
/// anything else can fail, so `--collect` sees every pod that started and how it exited.
fn pod(
    args: &Args,
    pipeline: &Path,
    pitches_file: &Path,
    index: usize,
) -> Result<ExitStatus, CommandError> {
    let pitches = plan::read(pitches_file).map_err(CommandError::usage_from)?;
    if index >= pitches.len() {
        return Err(CommandError::usage(format!(
            "--index {index} is past the last pitch ({} pitches)",
            pitches.len()
        )));
    }
    let canonical = canonical(pipeline)?;
    let batch = BatchFile {
        id: batch_id(&canonical, &pitches),
        pipeline: canonical,
        pitches,
    };
    let home = home(args)?;
    let dir = BatchDir::create(&home, &batch)
        .map_err(|e| CommandError::failure("cannot write the batch folder").because(e))?;
    let attempt = Attempt::begin(&dir, index)
        .map_err(|e| CommandError::failure("cannot record this attempt").because(e))?;
    let result = drive_pitch(args, pipeline, &dir, &batch, home, index);
    let code = match &result {
        Ok(status) => status.code(),
        Err(err) => err.exit_code(),
    };
    if let Err(err) = attempt.finish(code, dir.pitch(index).session) {
        eprintln!("crumb batch: cannot record how this attempt ended: {err}");
    }
    result
}

/// Drive pitch `index` as a pod does. The exit status says whether the *pod* failed, not the
/// session's outcome (that is in the home): 0 when the session ended (or waits for a person);
/// the child's own code when retrying cannot help (a usage error such as a missing agent CLI,
/// an invalid pipeline), which the Job's `podFailurePolicy` turns into `FailIndex`; else 1.
fn drive_pitch(
    args: &Args,
    pipeline: &Path,
    dir: &BatchDir,
    batch: &BatchFile,
    home: PathBuf,
    index: usize,
) -> Result<ExitStatus, CommandError> {
    let table = super::pipeline_file::compile_or_report(pipeline, CompileOptions::default())?;
    check_inputs(&table, index, &batch.pitches[index])?;
    let options = run::Options {
        home,
        jobs: 1,
        run_args: run_args(args),
        max_tokens: args.max_tokens,
        max_wall: None,
        only: Some(index),
        plain: !std::io::stderr().is_terminal(),
        quiet: args.json || args.csv,
    };
    let rows = run::run(dir, batch, &options).map_err(CommandError::failure)?;
    report(args, &rows)?;
    if rows.iter().all(Row::ended) {
        return Ok(ExitStatus::SUCCESS);
    }
    let child = dir.pitch(index).exit_code;
    // What the child said goes to the pod's log, where `kubectl logs` shows it.
    if let Some(tail) = log_tail(&dir.path().join("pitches").join(format!("{index}.log"))) {
        eprintln!("{tail}");
    }
    Ok(match child {
        Some(code @ (USAGE_ERROR | INVALID_PIPELINE)) => ExitStatus::outcome(code),
        _ => ExitStatus::outcome(FAILURE),
    })
}

/// The last few KiB of a child's stderr log.
fn log_tail(path: &Path) -> Option<String> {
    const TAIL: usize = 4096;
    let bytes = crate::fs::bounded_read::read(path, 1 << 20).ok()?;
    let start = bytes.len().saturating_sub(TAIL);
    let text = String::from_utf8_lossy(&bytes[start..]).trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// `--emit k8s`: the batch as manifests on stdout, nothing run.
fn emit_k8s(
    args: &Args,
    pipeline: &Path,
    pitches: &[plan::Pitch],
    id: &str,
    run_args: &[String],
) -> Result<ExitStatus, CommandError> {
    if args.max_tokens.is_some() {
        return Err(CommandError::usage(
            "--max-tokens cannot be carried into --emit k8s: a budget shared by pods needs a \
             ledger in the crumb home that crumb does not keep; bound each run with the \
             pipeline's `limits.tokens` instead",
        ));
    }
    let deadline_s = args
        .max_wall
        .as_deref()
        .map(|text| {
            parse_duration_ms(text)
                .map(|ms| ms.div_ceil(1000))
                .map_err(|e| CommandError::usage(format!("--max-wall {text}: {e}")))
        })
        .transpose()?;
    let emit = k8s::Emit {
        batch_id: id,
        pipeline: &pipeline.to_string_lossy(),
        pitches,
        parallelism: usize::from(args.jobs),
        image: &args.image,
        claim: &args.claim,
        workdir: &args.workdir,
        run_args,
        retries_per_index: args.retries_per_index,
        max_failed_indexes: args.max_failed_indexes,
        cpu: &args.cpu,
        memory: &args.memory,
        secret: args.secret.as_deref(),
        deadline_s,
    };
    let text = if args.emit.as_deref() == Some("k8s-collect") {
        k8s::collect_pod(&emit)
    } else {
        k8s::yaml(&emit)
    }
    .map_err(|e| CommandError::failure("cannot write the manifests").because(e))?;
    out!("{text}");
    Ok(ExitStatus::SUCCESS)
}

/// What every child `crumb run` is given.
fn run_args(args: &Args) -> Vec<String> {
    let mut out = Vec::new();
    let mut pair = |flag: &str, value: Option<&String>| {
        if let Some(value) = value {
            out.push(flag.to_owned());
            out.push(value.clone());
        }
    };
    pair("--adapter", args.adapter.as_ref());
    pair("--preset", args.preset.as_ref());
    pair("--mock-scenario", args.mock_scenario.as_ref());
    for bind in &args.binds {
        out.push("--bind".into());
        out.push(bind.clone());
    }
    out
}

fn collect_home(args: &Args, home: &Path) -> Result<ExitStatus, CommandError> {
    // A home whose pods all failed before a session existed holds only its batch folder.
    if !home.join("projects").is_dir() && !home.join("batches").is_dir() {
        return Err(CommandError::usage(format!(
            "{} is not a crumb home (no projects/ or batches/ folder)",
            home.display()
        )));
    }
    let (pitches, name, dir) = match (&args.pipeline, &args.pitches) {
        (Some(pipeline), Some(pitches)) => {
            let table =
                super::pipeline_file::compile_or_report(pipeline, CompileOptions::default())?;
            let pitches = plan::read(pitches).map_err(CommandError::usage_from)?;
            let dir = collect::batch_of(home, &pitches, pipeline);
            (pitches, Some(table.name), dir)
        }
        (None, None) => {
            let (dir, file) = only_batch(home)?;
            (file.pitches, None, Some(dir))
        }
        _ => {
            return Err(CommandError::usage(
                "--collect takes both the pipeline and the pitches file, or neither",
            ));
        }
    };
    let rows = collect::collect(home, &pitches, name.as_deref(), dir.as_ref());
    report(args, &rows)?;
    Ok(all_passed(&rows))
}

/// `SUCCESS` when every pitch passed, else `BATCH_NOT_ALL_PASSED`.
fn all_passed(rows: &[Row]) -> ExitStatus {
    if rows.iter().all(Row::passed) {
        ExitStatus::SUCCESS
    } else {
        ExitStatus::outcome(BATCH_NOT_ALL_PASSED)
    }
}

/// The one batch recorded in `home` (what `--collect <home>` alone summarises).
fn only_batch(home: &Path) -> Result<(BatchDir, BatchFile), CommandError> {
    let folders: Vec<PathBuf> = std::fs::read_dir(home.join("batches"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    match folders.as_slice() {
        [one] => BatchDir::open(one.clone())
            .map_err(|e| CommandError::usage(format!("{}: {e}", one.display()))),
        [] => Err(CommandError::usage(format!(
            "{} records no batch; give the pipeline and the pitches file",
            home.display()
        ))),
        _ => Err(CommandError::usage(format!(
            "{} records {} batches; give the pipeline and the pitches file to choose",
            home.display(),
            folders.len()
        ))),
    }
}

fn report(args: &Args, rows: &[Row]) -> Result<(), CommandError> {
    if args.json {
        let text = serde_json::to_string_pretty(rows).map_err(CommandError::failure_from)?;
        outln!("{text}");
    } else if args.csv {
        out!("{}", summary::csv(rows).map_err(CommandError::failure)?);
    } else {
        out!("{}", summary::human(rows));
    }
    Ok(())
}
