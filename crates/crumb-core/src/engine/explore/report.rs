//! What `crumb check` found, as data (JSON) and as text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::vocab::Outcome;

/// At most this many dead ends are listed (each with its path); one is enough to fix the first.
pub(crate) const MAX_FINDINGS: usize = 20;

/// The result of exploring a pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub pipeline: String,
    /// Distinct states explored.
    pub states: usize,
    pub(crate) transitions: usize,
    /// Every terminal outcome reachable, each with a shortest path to it.
    pub outcomes: Vec<Reached>,
    /// `done:` routes no explored path ends in (a PASS route may be reachable only as its
    /// downgrade, e.g. `pass_without_qa`), and routes no explored step fires at all (on an event
    /// the explorer does not play, such as `artifact.created`, or truly dead).
    pub declared_unreached: Vec<String>,
    /// The most agent turns any path takes before it ends (loops a person drives not counted).
    pub(crate) longest_turns: u32,
    pub(crate) longest_path: Vec<String>,
    /// The most turns of each role on any one path (worst-case spawns).
    pub(crate) max_turns_per_role: BTreeMap<String, u32>,
    /// Some loop goes round only while a person keeps answering (`/veto`, `/redo`): bounded by
    /// the person, not by a budget.
    pub(crate) person_loops: bool,
    /// Violations: dead ends, unbounded loops, a state space past the limit.
    pub findings: Vec<Finding>,
}

/// A terminal outcome and how to get there.
#[derive(Debug, Clone, Serialize)]
pub struct Reached {
    pub outcome: Outcome,
    pub reason: String,
    pub path: Vec<String>,
}

/// A violation, with the path that shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub code: String,
    pub message: String,
    pub path: Vec<String>,
}

impl Report {
    /// Whether the pipeline is proven: no violation.
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }

    /// The human-readable report.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "pipeline {}: {} states, {} transitions",
            self.pipeline, self.states, self.transitions
        );
        let _ = writeln!(out, "outcomes reachable:");
        for reached in &self.outcomes {
            let _ = writeln!(
                out,
                "  {} ({}) in {} steps",
                reached.outcome,
                reached.reason,
                reached.path.len()
            );
            for step in &reached.path {
                let _ = writeln!(out, "      {step}");
            }
        }
        if !self.declared_unreached.is_empty() {
            let _ = writeln!(out, "declared but never reached:");
            for route in &self.declared_unreached {
                let _ = writeln!(out, "  {route}");
            }
        }
        let _ = writeln!(out, "longest path: {} turns", self.longest_turns);
        for step in &self.longest_path {
            let _ = writeln!(out, "      {step}");
        }
        let _ = writeln!(out, "worst-case turns per role:");
        for (role, turns) in &self.max_turns_per_role {
            let _ = writeln!(out, "  {role}: {turns}");
        }
        if self.person_loops {
            let _ = writeln!(
                out,
                "note: some loops go round only while a person keeps answering (/veto, /redo)"
            );
        }
        if self.findings.is_empty() {
            let _ = writeln!(out, "ok: no dead end, every loop bounded, every path ends");
        }
        for finding in &self.findings {
            let _ = writeln!(out, "error[crumb::{}]: {}", finding.code, finding.message);
            for step in &finding.path {
                let _ = writeln!(out, "      {step}");
            }
        }
        out
    }
}
