//! Parallel roles: a route that spawns several roles at once (a fan-out, one effect per branch so
//! resume redoes exactly the branches without an outcome), and the `join:` route that collects
//! the branches' corrected verdicts and, once its mode is met, combines them into the one verdict
//! the verdict routes see. Every step is recorded as a `hook` event (`fan_out`, `join_waiting`,
//! `join`, `join_ignored`), so a reader of the transcript sees why the session moved.

use serde_json::{Map, json};

use super::Step;
use crate::engine::effect::{Feedback, SpawnCause};
use crate::engine::guards::verdict_for;
use crate::engine::state::{BranchResult, FanOut, Joined, MAX_TEXT, QaSnapshot, clip};
use crate::pipeline::choices::{Combine, Guard, JoinMode};
use crate::pipeline::table::CompiledRoute;
use crate::vocab::{Severity, Verdict};

impl Step<'_> {
    /// Spawn every role of the route at once. The budgets are checked for the whole round before
    /// any branch starts; a round that would cross one starts none (see `spent_budget`).
    pub(super) fn spawn_all(
        &mut self,
        route: &CompiledRoute,
        roles: &[String],
        feedback: Option<Feedback>,
        cause: SpawnCause,
    ) {
        if let Some(reason) = self.spent_budget(roles) {
            self.stop(reason);
            return;
        }
        self.state.fan_out = Some(FanOut {
            event_id: self.event.id.clone(),
            route: route.index,
            roles: roles.to_vec(),
            results: Vec::new(),
            joined: None,
        });
        let feedback = if route.with_feedback { feedback } else { None };
        for role in roles {
            self.spawn(role, cause, feedback.clone(), Vec::new());
        }
        let mut data = Map::new();
        data.insert("roles".into(), json!(roles));
        // Routes are numbered from 1 wherever a person reads them (validate, check, budgets).
        data.insert("route".into(), json!(route.index + 1));
        self.hook(
            "fan_out",
            format!("{} spawned together", roles.join(" + ")),
            data,
        );
    }

    /// Whether an open (not yet joined) fan-out waits for `role`'s first verdict.
    pub(super) fn fan_out_takes(&self, role: &str) -> bool {
        self.state.fan_out.as_ref().is_some_and(|f| {
            f.joined.is_none()
                && f.roles.iter().any(|r| r == role)
                && !f.results.iter().any(|r| r.role == role)
        })
    }

    /// A branch's `judge.score` reached a join route: record it, and fire the join once its mode
    /// is met. `feedback` is this branch's (already assessed by the guards).
    pub(super) fn join(&mut self, mode: JoinMode, combine: Combine, feedback: Option<Feedback>) {
        let event = self.event;
        let (Some(feedback), Some(record)) = (feedback, self.state.verification.latest.as_ref())
        else {
            return;
        };
        let branch = BranchResult {
            role: event.from.clone(),
            event_id: event.id.clone(),
            verdict: record.corrected.verdict,
            severity: feedback.severity,
            aggregate: record.corrected.aggregate,
            feedback: feedback.text.clone(),
        };
        let takes = self.fan_out_takes(&event.from);
        let Some(fan_out) = self.state.fan_out.as_mut().filter(|_| takes) else {
            let mut data = Map::new();
            data.insert("role".into(), json!(event.from));
            self.hook(
                "join_ignored",
                format!(
                    "{}'s verdict is recorded, not routed: no open fan-out waits for it",
                    event.from
                ),
                data,
            );
            return;
        };
        fan_out.results.push(branch);
        let needed = mode.needed(fan_out.roles.len());
        let have = fan_out.results.len();
        if have < needed {
            let mut data = Map::new();
            data.insert("role".into(), json!(event.from));
            data.insert("reported".into(), json!(have));
            data.insert("needed".into(), json!(needed));
            self.hook(
                "join_waiting",
                format!("{} reported ({have} of {needed})", event.from),
                data,
            );
            return;
        }
        let results = fan_out.results.clone();
        let (verdict, aggregate) = self.combined(combine, &results);
        let failing: Vec<&BranchResult> = results
            .iter()
            .filter(|r| r.verdict != Verdict::Pass)
            .collect();
        let severity = failing
            .iter()
            .map(|r| r.severity)
            .min_by_key(|s| s.index())
            .unwrap_or(Severity::Important);
        let shown = if failing.is_empty() {
            results.iter().collect()
        } else {
            failing
        };
        let text = shown
            .iter()
            .map(|r| format!("{}: {}", r.role, r.feedback))
            .collect::<Vec<_>>()
            .join("\n");
        self.record_join(
            mode,
            Joined {
                verdict,
                severity,
                aggregate,
                combine: json!(combine).as_str().unwrap_or_default().to_owned(),
                branches: results,
            },
        );
        let combined = Feedback {
            source_event_id: event.id.clone(),
            verdict,
            severity,
            text: clip(&text, MAX_TEXT),
            suggested_change: None,
        };
        self.route_verdict(verdict, severity, combined);
    }

    /// Keep the join's verdict (the fan-out's, and the one a summary shows) and publish it as a
    /// `join` hook with every branch's verdict.
    fn record_join(&mut self, mode: JoinMode, joined: Joined) {
        if let Some(fan_out) = self.state.fan_out.as_mut() {
            fan_out.joined = Some(joined.clone());
        }
        let mut data = Map::new();
        data.insert("mode".into(), json!(mode));
        data.insert("combine".into(), json!(joined.combine));
        data.insert("branches".into(), json!(joined.branches));
        data.insert("verdict".into(), json!(joined.verdict));
        data.insert("aggregate".into(), json!(joined.aggregate));
        data.insert("severity".into(), json!(joined.severity));
        let body = format!(
            "{} joined: {} (aggregate {}, {})",
            joined
                .branches
                .iter()
                .map(|r| format!("{} {}", r.role, r.verdict))
                .collect::<Vec<_>>()
                .join(", "),
            joined.verdict,
            joined.aggregate,
            joined.combine
        );
        self.state.verification.routed_join = Some(joined);
        self.hook("join", body, data);
    }

    /// The combined verdict and aggregate of the branches under `combine`. A pass still needs a
    /// passing QA run when the pipeline declares `pass_requires_qa`.
    fn combined(&self, combine: Combine, results: &[BranchResult]) -> (Verdict, f64) {
        let scoring = &self.table.scoring;
        let n = results.len();
        let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
        let worst = results
            .iter()
            .map(|r| r.verdict)
            .max_by_key(|v| v.index())
            .unwrap_or(Verdict::Fail);
        // Branches are few (the roles of one route): the count is exact as a float.
        let branches = f64::from(u32::try_from(n.max(1)).unwrap_or(u32::MAX));
        let mean = round(results.iter().map(|r| r.aggregate).sum::<f64>() / branches);
        let min = results
            .iter()
            .map(|r| r.aggregate)
            .fold(f64::INFINITY, f64::min);
        let (verdict, aggregate) = match combine {
            Combine::AllPass => (worst, mean),
            Combine::Majority => {
                let passes = count(Verdict::Pass);
                let verdict = if passes * 2 > n {
                    Verdict::Pass
                } else if (passes + count(Verdict::Partial)) * 2 > n {
                    Verdict::Partial
                } else if count(Verdict::Reject) * 2 > n {
                    Verdict::Reject
                } else {
                    Verdict::Fail
                };
                (verdict, mean)
            }
            Combine::Mean => (verdict_for(scoring, mean), mean),
            Combine::Min => (verdict_for(scoring, min), min),
        };
        let qa_passed = self.state.qa.as_ref().is_some_and(QaSnapshot::passed);
        if verdict == Verdict::Pass && scoring.guards.contains(&Guard::PassRequiresQa) && !qa_passed
        {
            return (Verdict::Fail, aggregate);
        }
        (verdict, aggregate)
    }
}

/// Four decimals, as the guards keep scores.
fn round(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}
