//! `crumb check`'s findings (dead ends, unbounded loops, unreachable outcomes, routes that never
//! fire) for a pipeline that compiles, found on a thread of their own so typing never waits for
//! the exploration. Only the newest edit of each file is explored: a job overtaken by a later
//! edit before or while it runs is dropped, and what it found is never published.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::Sender;
use crumb_core::engine::explore::{self, Options, Report};
use crumb_core::pipeline::table::TransitionTable;
use lsp_server::{Message, Notification};
use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString, PublishDiagnosticsParams, Range};

use super::log;
use super::uri::from_path;

/// What `crumb check` findings carry in `source`, so they are told from `crumb validate`'s.
pub(crate) const SOURCE: &str = "crumb check";

/// One pipeline to explore, and what its diagnostics are without the findings.
pub(crate) struct Job {
    pub(crate) path: PathBuf,
    pub(crate) generation: u64,
    pub(crate) table: TransitionTable,
    pub(crate) validate: Vec<Diagnostic>,
    /// Where a finding about the whole route table goes (the `routes:` key).
    pub(crate) routes: Range,
    /// Where each route is, by index, for the routes that never fire.
    pub(crate) route_ranges: Vec<Range>,
    pub(crate) version: Option<i32>,
}

/// The newest generation published for each file; shared with the server, which bumps it
/// under the same lock it publishes with.
pub(crate) type Generations = Arc<Mutex<HashMap<PathBuf, u64>>>;

/// The background explorer.
pub(crate) struct Checker {
    jobs: mpsc::Sender<Job>,
}

impl Checker {
    pub(crate) fn start(sender: Sender<Message>, generations: Generations) -> Checker {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("crumb-lsp-check".into())
            .spawn(move || work(&queue, &sender, &generations))
            .map_or_else(
                |err| log::error(&format!("cannot start the check thread: {err}")),
                drop,
            );
        Checker { jobs }
    }

    pub(crate) fn submit(&self, job: Job) {
        let _ = self.jobs.send(job);
    }
}

fn work(queue: &mpsc::Receiver<Job>, sender: &Sender<Message>, generations: &Generations) {
    while let Ok(first) = queue.recv() {
        // Only the newest job of each file is worth exploring.
        let mut newest: HashMap<PathBuf, Job> = HashMap::new();
        newest.insert(first.path.clone(), first);
        while let Ok(job) = queue.try_recv() {
            newest.insert(job.path.clone(), job);
        }
        for (_, job) in newest {
            if !current(generations, &job) {
                continue;
            }
            let report = explore::check(&job.table, Options::default());
            let mut diagnostics = job.validate.clone();
            diagnostics.extend(findings(&report, &job));
            let Some(uri) = from_path(&job.path) else {
                continue;
            };
            let held = generations.lock().unwrap_or_else(PoisonError::into_inner);
            if held.get(&job.path) == Some(&job.generation) {
                let params = PublishDiagnosticsParams::new(uri, diagnostics, job.version);
                let _ = sender.send(Message::Notification(Notification::new(
                    "textDocument/publishDiagnostics".into(),
                    params,
                )));
            }
            drop(held);
        }
    }
}

fn current(generations: &Generations, job: &Job) -> bool {
    generations
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&job.path)
        == Some(&job.generation)
}

/// The report's violations and unreached routes as diagnostics.
pub(crate) fn findings(report: &Report, job: &Job) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = report
        .findings
        .iter()
        .map(|finding| {
            let mut message = finding.message.clone();
            for step in &finding.path {
                message.push_str("\n  ");
                message.push_str(step);
            }
            diagnostic(
                job.routes,
                DiagnosticSeverity::ERROR,
                &finding.code,
                message,
            )
        })
        .collect();
    for line in &report.declared_unreached {
        // "route 3: on x never fires" / "route 5: done pass (verdict_pass)".
        let range = line
            .strip_prefix("route ")
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| job.route_ranges.get(n.checked_sub(1)?))
            .copied()
            .unwrap_or(job.routes);
        out.push(diagnostic(
            range,
            DiagnosticSeverity::WARNING,
            "unreached",
            line.clone(),
        ));
    }
    out
}

fn diagnostic(
    range: Range,
    severity: DiagnosticSeverity,
    code: &str,
    message: String,
) -> Diagnostic {
    Diagnostic {
        range,
        severity: Some(severity),
        code: Some(NumberOrString::String(code.to_owned())),
        source: Some(SOURCE.to_owned()),
        message,
        ..Diagnostic::default()
    }
}
