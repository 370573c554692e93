//! What a QA run found: per-check results, AC results, and the `qa.result` event built from them.
//!
//! The report is plain data so the runtime, `crumb qa` and tests all read the same thing; the only
//! place that decides "did QA pass, fail, or not run at all" is [`QaReport::status`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::transcript::{ArtifactRef, ArtifactRole, Data, Draft, Kind, Metadata, Visibility};

/// Value of `metadata.tool` on every `qa.result`.
pub(crate) const QA_TOOL: &str = "qa-check-effect@v1";

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CheckStatus {
    /// The check ran and everything it looks at was fine.
    Pass,
    /// The check ran and found a problem.
    Fail,
    /// The check could not run: the browser is missing, did not start, lost its connection or
    /// could not load the page (an overloaded machine). Says nothing about the artifact, so it is
    /// never a pass and never the build's failure: QA then ends with status `error`.
    Unavailable,
    /// There was nothing to check (e.g. a spec without predicates). Counts as passing.
    Skipped,
    /// The check itself broke (panic, internal error). Counts as failing.
    Error,
    /// The check ran out of time. Counts as failing.
    Timeout,
}

impl CheckStatus {
    /// Whether a blocking check with this status lets QA pass.
    pub(crate) fn is_ok(self) -> bool {
        matches!(self, CheckStatus::Pass | CheckStatus::Skipped)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::Unavailable => "unavailable",
            CheckStatus::Skipped => "skipped",
            CheckStatus::Error => "error",
            CheckStatus::Timeout => "timeout",
        }
    }
}

/// One problem a check found. `code` is stable (tests and guards match on it); `message` is for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Finding {
    pub code: String,
    pub message: String,
}

impl Finding {
    pub(crate) fn new(code: &str, message: impl Into<String>) -> Self {
        Finding {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

/// The result of one declared check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CheckResult {
    pub id: String,
    /// `file`, `max_bytes`, `html`, `command`, `browser` or `ac_predicates`.
    pub kind: String,
    pub blocking: bool,
    pub status: CheckStatus,
    pub runtime_ms: u64,
    pub findings: Vec<Finding>,
    /// Kind-specific facts (sizes, exit code, captured output, observed signals…).
    #[serde(skip_serializing_if = "Value::is_null", default)]
    pub details: Value,
}

impl CheckResult {
    /// A result with no findings and no details yet.
    pub(crate) fn new(id: &str, kind: &str, blocking: bool, status: CheckStatus) -> Self {
        CheckResult {
            id: id.to_owned(),
            kind: kind.to_owned(),
            blocking,
            status,
            runtime_ms: 0,
            findings: Vec::new(),
            details: Value::Null,
        }
    }

    /// Add a finding and mark the check failed.
    pub(crate) fn fail(&mut self, finding: Finding) {
        self.status = CheckStatus::Fail;
        self.findings.push(finding);
    }
}

/// Outcome of one acceptance predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum AcStatus {
    Pass,
    Fail,
    Skip,
}

/// One acceptance predicate's result, as the reducer's guards read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AcResult {
    pub ac_id: String,
    pub status: AcStatus,
    pub reason: String,
    pub runtime_ms: u64,
}

/// What a QA run says about the artifact: `data.status` of the `qa.result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum QaStatus {
    /// Every blocking check passed (or had nothing to check).
    Pass,
    /// A blocking check found a problem, or the run timed out: the artifact is known bad.
    Fail,
    /// No blocking check failed, but one could not run: nothing is known about the artifact.
    Error,
}

impl QaStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            QaStatus::Pass => "pass",
            QaStatus::Fail => "fail",
            QaStatus::Error => "error",
        }
    }
}

/// `exec_exit_code` of a run whose checks could not run (status `error`).
pub(crate) const EXIT_COULD_NOT_RUN: i32 = 3;

/// Which machine-wide browser slot a run held, and when (Unix epoch milliseconds), so a caller
/// can check that no more browsers ran at once than the pool allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SlotFacts {
    pub index: usize,
    pub slots: usize,
    /// How long the run waited for the slot (not counted against any timeout).
    pub waited_ms: u64,
    pub acquired_at_ms: u64,
    pub released_at_ms: u64,
}

/// Everything a QA run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct QaReport {
    pub checks: Vec<CheckResult>,
    pub ac_results: Vec<AcResult>,
    /// Screenshot taken by a browser check, relative to the report base (session dir).
    pub screenshot: Option<ArtifactRef>,
    pub runtime_ms: u64,
    /// The whole run hit `qa.timeout`; checks that had not finished are reported as `timeout`.
    pub timed_out: bool,
    /// `chromium --version` of the browser used, when one ran.
    pub browser_version: Option<String>,
    /// Pid (and process group) of the browser that ran, so a caller can check nothing is left.
    pub browser_pid: Option<i32>,
    /// sha256 and size of the entry file, when the pipeline declares one and it exists.
    pub entry: Option<EntryFacts>,
    /// The browser slot the run held, when it started a browser under the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_slot: Option<SlotFacts>,
    /// Where the browser's own time went, when one was started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<BrowserTimings>,
}

/// The browser's fixed costs in a run (`data.timings_ms`), apart from what each check did with it
/// (a browser check's `details.timings_ms`): so a slow QA shows whether the machine or the page
/// was slow.
// The `_ms` suffix is part of each field's JSON name in `qa.result`.
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BrowserTimings {
    /// Serving the artifacts and starting Chromium until its first page answers over `DevTools`
    /// (with a browser started ahead of QA: only what QA still waited for).
    pub browser_start_ms: u64,
    /// A browser started ahead of QA, beside the build turn: how long its start took there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prestarted_ms: Option<u64>,
    /// Killing the browser's process group and reaping it.
    pub shutdown_ms: u64,
}

/// Facts about the entry artifact (`artifact_sha256`, `loc_own_bytes`: the names legacy
/// transcripts use too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EntryFacts {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    /// Total size of the entry's folder (the bundle), dotfiles excluded.
    pub bundle_bytes: u64,
    pub bundle_file_count: u64,
}

impl QaReport {
    /// Pass, fail, or could not run. A genuine failure wins over a check that could not run:
    /// the artifact is then known bad whatever the others would have said.
    pub(crate) fn status(&self) -> QaStatus {
        let blocking = || self.checks.iter().filter(|c| c.blocking);
        if self.timed_out
            || blocking().any(|c| !c.status.is_ok() && c.status != CheckStatus::Unavailable)
        {
            QaStatus::Fail
        } else if blocking().any(|c| c.status == CheckStatus::Unavailable) {
            QaStatus::Error
        } else {
            QaStatus::Pass
        }
    }

    /// 0 when every blocking check passed (or had nothing to check); 2 when the whole run timed
    /// out; 3 when the checks could not run (status `error`); 1 otherwise.
    pub(crate) fn exec_exit_code(&self) -> i32 {
        match self.status() {
            QaStatus::Pass => 0,
            QaStatus::Fail if self.timed_out => 2,
            QaStatus::Fail => 1,
            QaStatus::Error => EXIT_COULD_NOT_RUN,
        }
    }

    /// Why the checks could not run: each distinct cause once, with the checks it stopped.
    pub(crate) fn could_not_run(&self) -> Option<String> {
        let mut causes: Vec<(String, Vec<&str>)> = Vec::new();
        for check in self
            .checks
            .iter()
            .filter(|c| c.blocking && c.status == CheckStatus::Unavailable)
        {
            let message = check.findings.first().map_or("could not run", |f| {
                f.message.lines().next().unwrap_or_default()
            });
            match causes.iter_mut().find(|(m, _)| m == message) {
                Some((_, ids)) => ids.push(&check.id),
                None => causes.push((message.to_owned(), vec![&check.id])),
            }
        }
        (!causes.is_empty()).then(|| {
            causes
                .iter()
                .map(|(message, ids)| format!("{}: {message}", ids.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Every finding as `"<check id>: <code>: <message>"`, blocking checks first.
    pub(crate) fn findings(&self) -> Vec<String> {
        let mut ordered: Vec<&CheckResult> = self.checks.iter().filter(|c| c.blocking).collect();
        ordered.extend(self.checks.iter().filter(|c| !c.blocking));
        ordered
            .into_iter()
            .flat_map(|c| {
                c.findings
                    .iter()
                    .map(move |f| format!("{}: {}: {}", c.id, f.code, f.message))
            })
            .collect()
    }

    fn status_of(&self, kind: &str) -> Option<CheckStatus> {
        let mut statuses = self
            .checks
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| c.status);
        let first = statuses.next()?;
        Some(statuses.fold(first, |acc, s| if acc.is_ok() { s } else { acc }))
    }

    /// The `data` object of the `qa.result` event.
    pub(crate) fn data(&self) -> Data {
        let exit = self.exec_exit_code();
        let mut data = Data::new();
        data.insert("exec_exit_code".into(), json!(exit));
        data.insert("status".into(), json!(self.status().as_str()));
        if self.status() == QaStatus::Error
            && let Some(why) = self.could_not_run()
        {
            data.insert("error".into(), json!(why));
        }
        if let Some(slot) = &self.browser_slot {
            data.insert("browser_slot".into(), json!(slot));
        }
        if let Some(timings) = &self.timings {
            data.insert("timings_ms".into(), json!(timings));
        }
        // Reference-compatible summary fields, named for what they actually measure.
        data.insert(
            "lint_passed".into(),
            json!(self.status_of("html").is_none_or(CheckStatus::is_ok)),
        );
        let first_interaction = match self.status_of("browser") {
            None => "skipped",
            Some(CheckStatus::Pass) => "ok",
            Some(CheckStatus::Unavailable) => "unavailable",
            Some(_) => "fail",
        };
        data.insert("first_interaction".into(), json!(first_interaction));
        if let Some(version) = &self.browser_version {
            data.insert("browsers_tested".into(), json!([version]));
        }
        if let Some(pid) = self.browser_pid {
            data.insert("browser_pid".into(), json!(pid));
        }
        if let Some(entry) = &self.entry {
            data.insert("entry".into(), json!(entry.path));
            data.insert("artifact_sha256".into(), json!(entry.sha256));
            data.insert("loc_own_bytes".into(), json!(entry.bundle_bytes));
            data.insert("bundle_file_count".into(), json!(entry.bundle_file_count));
        }
        data.insert("runtime_ms".into(), json!(self.runtime_ms));
        data.insert("timed_out".into(), json!(self.timed_out));
        data.insert(
            "checks".into(),
            serde_json::to_value(&self.checks).unwrap_or(Value::Null),
        );
        if self.checks.iter().any(|c| c.kind == "ac_predicates") {
            let passed = self
                .ac_results
                .iter()
                .filter(|r| r.status == AcStatus::Pass)
                .count();
            data.insert(
                "ac_results".into(),
                serde_json::to_value(&self.ac_results).unwrap_or(Value::Null),
            );
            data.insert("ac_pass_count".into(), json!(passed));
            data.insert("ac_total".into(), json!(self.ac_results.len()));
        }
        data.insert("findings".into(), json!(self.findings()));
        if let Some(shot) = &self.screenshot {
            data.insert("screenshot".into(), json!(shot.path));
        }
        data
    }

    /// One-line summary for the event body and for people.
    pub(crate) fn summary(&self) -> String {
        let passed = self.checks.iter().filter(|c| c.status.is_ok()).count();
        let head = match self.status() {
            QaStatus::Pass => "qa PASS",
            QaStatus::Fail => "qa FAIL",
            QaStatus::Error => "qa ERROR (could not run)",
        };
        let mut line = format!(
            "{head}: {passed}/{} checks ok in {} ms",
            self.checks.len(),
            self.runtime_ms
        );
        if self.timed_out {
            line.push_str(" (timed out)");
        }
        let failing: Vec<String> = self
            .checks
            .iter()
            .filter(|c| !c.status.is_ok())
            .map(|c| format!("{} {}", c.id, c.status.as_str()))
            .collect();
        if !failing.is_empty() {
            line.push_str(" — ");
            line.push_str(&failing.join(", "));
        }
        line
    }

    /// The `qa.result` event draft: from `system`, answering the build event.
    pub(crate) fn to_draft(&self, build_event_id: Option<&str>) -> Draft {
        let mut draft = Draft::new("system", Kind::QaResult)
            .body(self.summary())
            .data(self.data())
            .metadata(Metadata {
                visibility: Some(Visibility::Public),
                tool: Some(QA_TOOL.to_owned()),
                deterministic: Some(true),
                ..Metadata::default()
            });
        if let Some(id) = build_event_id {
            draft = draft.parent(id);
        }
        if let Some(shot) = &self.screenshot {
            draft = draft.artifact(ArtifactRef {
                role: Some(ArtifactRole::Screenshot),
                ..shot.clone()
            });
        }
        draft
    }
}
