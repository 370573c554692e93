//! `crumb qa <pipeline> <artifacts-dir>`: run a pipeline's QA block on any folder, outside a
//! session — for people iterating on a game by hand, and for tests.
//!
//! Exit codes ([`crate::exit_codes`]): `SUCCESS` QA passed (`exec_exit_code` 0), `FAILURE` QA
//! failed, timed out or could not run (`exec_exit_code` 3), `INVALID_PIPELINE`, `USAGE_ERROR` (including a pipeline without `qa:`).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::{CommandError, ErrorKind, ExitStatus};
use super::{pipeline_file, stdout};
use crate::pipeline::compile::CompileOptions;
use crate::qa::predicate;
use crate::qa::report::{AcStatus, QaReport};
use crate::qa::runner::{self, QaRequest};

/// Largest `--ac` file read.
const MAX_AC_FILE: u64 = 1024 * 1024;

/// Arguments of `crumb qa`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 QA passed, 1 QA failed, timed out or could not run (data.status error: the machine, not the artifact), 2 usage error, 3 invalid pipeline."
)]
pub struct Args {
    /// The pipeline whose `qa:` block to run.
    pub pipeline: PathBuf,
    /// The folder the checks' paths are relative to (what a session calls `artifacts/`).
    pub artifacts_dir: PathBuf,
    /// Print the `qa.result` event draft as JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// Acceptance predicates as JSON: an array of `{id, intent, predicate, action?, wait_ms?,
    /// timeout_ms?}` or an object with `ac_predicates` (a spec's `data`).
    #[arg(long, value_name = "FILE")]
    pub ac: Option<PathBuf>,
    /// Where to write screenshots (default: a new folder under the system temp dir).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let options = CompileOptions {
        check_templates: false,
    };
    let table = pipeline_file::compile_or_report(&args.pipeline, options)?;
    let Some(spec) = table.qa else {
        return Err(CommandError::usage(format!(
            "{} declares no `qa:` block",
            args.pipeline.display()
        )));
    };
    if !args.artifacts_dir.is_dir() {
        return Err(CommandError::usage(format!(
            "{} is not a folder",
            args.artifacts_dir.display()
        )));
    }
    let parsed = match &args.ac {
        None => predicate::Parsed::default(),
        Some(path) => read_ac_file(path)
            .map_err(|why| CommandError::usage(format!("--ac {}: {why}", path.display())))?,
    };
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("crumb-qa-{}", ulid::Ulid::new())));
    let request = QaRequest {
        artifacts_dir: args.artifacts_dir.clone(),
        out_dir,
        report_base: PathBuf::new(),
        label: String::new(),
        predicates: parsed.predicates,
        predicate_problems: parsed.problems,
    };
    // This process ends right after QA: adopt Chromium's orphans so none outlives us as a zombie.
    crate::process::reap::become_subreaper();
    // No session will ever be resumed for this run: register it so the next standalone run reaps
    // what it left should it be killed, and reap what earlier killed runs left.
    let registration = crate::home::CrumbHome::from_env().ok().and_then(|home| {
        crate::runtime::standalone_qa::reap_dead(home.root());
        std::fs::create_dir_all(&request.out_dir).ok()?;
        crate::runtime::standalone_qa::register(home.root(), &request.out_dir).ok()
    });
    let report = runner::run_blocking(&spec, &request);
    drop(registration);
    let text = if args.json {
        let draft = report.to_draft(None);
        let mut s = serde_json::to_string_pretty(&draft).unwrap_or_default();
        s.push('\n');
        s
    } else {
        human(&report)
    };
    stdout::print(text)?;
    if report.exec_exit_code() != 0 {
        // The report says which check failed.
        return Err(CommandError::reported(ErrorKind::Failure));
    }
    Ok(ExitStatus::SUCCESS)
}

fn read_ac_file(path: &Path) -> Result<predicate::Parsed, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_AC_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_AC_FILE {
        return Err(format!("larger than {MAX_AC_FILE} bytes"));
    }
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let parsed = predicate::parse(&value);
    if parsed.predicates.is_empty()
        && !parsed.problems.is_empty()
        && !value.is_array()
        && value.get("ac_predicates").is_none()
    {
        return Err(parsed.problems.join("; "));
    }
    Ok(parsed)
}

/// The summary people read.
fn human(report: &QaReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "{}", report.summary());
    for check in &report.checks {
        let tag = if check.blocking {
            ""
        } else {
            " (non-blocking)"
        };
        let _ = writeln!(
            out,
            "  {:<12} {:<14} {:<11} {:>6} ms{tag}",
            check.id,
            check.kind,
            check.status.as_str(),
            check.runtime_ms
        );
        for f in &check.findings {
            let _ = writeln!(out, "      - {}: {}", f.code, f.message);
        }
    }
    if !report.ac_results.is_empty() {
        let _ = writeln!(out, "acceptance predicates:");
        for ac in &report.ac_results {
            let status = match ac.status {
                AcStatus::Pass => "PASS",
                AcStatus::Fail => "FAIL",
                AcStatus::Skip => "SKIP",
            };
            let _ = writeln!(out, "  {:<8} {status}  {}", ac.ac_id, ac.reason);
        }
    }
    if let Some(shot) = &report.screenshot {
        let _ = writeln!(out, "screenshot: {}", shot.path);
    }
    let _ = writeln!(out, "exec_exit_code: {}", report.exec_exit_code());
    out
}
