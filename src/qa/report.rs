//! What a QA run found: per-check results, AC results, and the `qa.result` event built from them.
//!
//! The report is plain data so the runtime, `crumb qa` and tests all read the same thing; the only
//! place that decides "did QA pass" is [`QaReport::exec_exit_code`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::transcript::{ArtifactRef, ArtifactRole, Data, Draft, Kind, Metadata, Visibility};

/// Value of `metadata.tool` on every `qa.result`.
pub const QA_TOOL: &str = "qa-check-effect@v1";

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The check ran and everything it looks at was fine.
    Pass,
    /// The check ran and found a problem.
    Fail,
    /// The check could not run because a tool it needs is missing (no Chromium). Never a pass.
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
    pub fn is_ok(self) -> bool {
        matches!(self, CheckStatus::Pass | CheckStatus::Skipped)
    }

    pub fn as_str(self) -> &'static str {
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
pub struct Finding {
    pub code: String,
    pub message: String,
}

impl Finding {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Finding {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

/// The result of one declared check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
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
    pub fn new(id: &str, kind: &str, blocking: bool, status: CheckStatus) -> Self {
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
    pub fn fail(&mut self, finding: Finding) {
        self.status = CheckStatus::Fail;
        self.findings.push(finding);
    }
}

/// Outcome of one acceptance predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AcStatus {
    Pass,
    Fail,
    Skip,
}

/// One acceptance predicate's result, as the reducer's guards read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcResult {
    pub ac_id: String,
    pub status: AcStatus,
    pub reason: String,
    pub runtime_ms: u64,
}

/// Everything a QA run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaReport {
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
}

/// Facts about the entry artifact (`artifact_sha256`, `loc_own_bytes`: the names legacy
/// transcripts use too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryFacts {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    /// Total size of the entry's folder (the bundle), dotfiles excluded.
    pub bundle_bytes: u64,
    pub bundle_file_count: u64,
}

impl QaReport {
    /// 0 when every blocking check passed (or had nothing to check); 2 when the whole run timed out;
    /// 1 otherwise.
    pub fn exec_exit_code(&self) -> i32 {
        if self.timed_out {
            2
        } else {
            i32::from(self.checks.iter().any(|c| c.blocking && !c.status.is_ok()))
        }
    }

    /// Every finding as `"<check id>: <code>: <message>"`, blocking checks first.
    pub fn findings(&self) -> Vec<String> {
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
    pub fn data(&self) -> Data {
        let exit = self.exec_exit_code();
        let mut data = Data::new();
        data.insert("exec_exit_code".into(), json!(exit));
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
    pub fn summary(&self) -> String {
        let passed = self.checks.iter().filter(|c| c.status.is_ok()).count();
        let head = if self.exec_exit_code() == 0 {
            "qa PASS"
        } else {
            "qa FAIL"
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
    pub fn to_draft(&self, build_event_id: Option<&str>) -> Draft {
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
