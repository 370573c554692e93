//! Stage 3 of the reducer: the table's route for the event. A `judge.score` goes through the
//! guards first and an `audit` event lists the corrections; then a kind route `on: judge.score`
//! matching its sender fires (two judges in sequence), else its corrected verdict picks the route.
//! A spawn whose role would spend a budget that is already gone stops the session instead.

use serde_json::{Map, json};

use super::Step;
use crate::engine::effect::{Effect, Feedback, RunQa, SpawnCause};
use crate::engine::guards::{self, Evidence, RawScores};
use crate::engine::state::{Awaiting, MAX_TEXT, QaSnapshot, VerdictRecord, clip};
use crate::pipeline::choices::Guard;
use crate::pipeline::kinds::Slot;
use crate::pipeline::table::{Action, CompiledRoute, Trigger};
use crate::pipeline::triggers::QA_ERROR_TRIGGER;
use crate::transcript::{Draft, Kind, Metadata};
use crate::vocab::{Outcome, Severity, Verdict};

impl Step<'_> {
    // ---- stage 3: the table's route ----------------------------------------------------------

    pub(super) fn route(&mut self) {
        let event = self.event;
        if event.kind == Kind::JudgeScore {
            self.judge();
            return;
        }
        // A person's approve, veto and answer fire their routes in the commands stage, with an ack.
        if matches!(
            event.kind,
            Kind::UserApprove | Kind::UserVeto | Kind::UserAnswer
        ) {
            return;
        }
        // A plan kind without its own route takes the route of the first plan kind that has one.
        let route = self
            .table
            .route_for(event.kind.as_str(), &event.from)
            .or_else(|| self.table.plan_route_for(event.kind.as_str(), &event.from));
        if event.kind == Kind::QaResult && self.state.qa.as_ref().is_some_and(|q| q.could_not_run) {
            // Not a verdict on the build: retried, then the `qa.error` route (or a person).
            self.qa_could_not_run();
            return;
        }
        let Some(route) = route else {
            if !event.kind.as_str().starts_with("user.") {
                self.state.unrouted_events += 1;
            }
            return;
        };
        if self.table.slot(event.kind.as_str()) == Some(Slot::Plan)
            && self.state.budgets.respecs > self.table.limits.max_respec
        {
            self.stop("too_many_respec");
            return;
        }
        self.fire(route, None, SpawnCause::Route);
    }

    /// The stop reason when starting the turns of `roles` (one spawn, or a whole fan-out round)
    /// would go past a budget. Each budget counts the whole round: every role of it that writes a
    /// plan kind once a plan exists re-plans (`max_respec`), every judging role verifies
    /// (`max_verify`), and no turn starts once the token total is at or past `tokens.hard` or the
    /// session time at or past the wall-clock cap. A round that would cross a budget starts none
    /// of its turns: the session stops before any branch runs, so no turn is wasted.
    pub(super) fn spent_budget(&self, roles: &[String]) -> Option<&'static str> {
        let limits = &self.table.limits;
        let budgets = &self.state.budgets;
        if limits.tokens_hard > 0 && budgets.tokens >= limits.tokens_hard {
            return Some("token_exhausted");
        }
        if limits.wall_clock_hard_ms > 0
            && self.state.clock.elapsed_ms() >= limits.wall_clock_hard_ms
        {
            return Some("wall_clock_exhausted");
        }
        let produces = |role: &str, kind: Kind| {
            self.table
                .role(role)
                .is_some_and(|r| r.produces.iter().any(|k| k == kind.as_str()))
        };
        let count = |keep: &dyn Fn(&str) -> bool| {
            u32::try_from(roles.iter().filter(|r| keep(r)).count()).unwrap_or(u32::MAX)
        };
        let replans = count(&|r| self.table.produces_slot(r, Slot::Plan));
        if replans > 0
            && self.state.plan.is_some()
            && budgets.respecs.saturating_add(replans) > limits.max_respec
        {
            return Some("too_many_respec");
        }
        let verifies = count(&|r| produces(r, Kind::JudgeScore));
        if verifies > 0
            && self.state.verification.count.saturating_add(verifies) > limits.max_verify
        {
            return Some("too_many_verify");
        }
        None
    }

    /// Carry out a route's action.
    pub(in crate::engine) fn fire(
        &mut self,
        route: &CompiledRoute,
        feedback: Option<Feedback>,
        cause: SpawnCause,
    ) {
        if let Some(fired) = self.fired.as_deref_mut() {
            fired.push(route.index);
        }
        if let Some(max) = route.max {
            let fires = self.state.route_fires.entry(route.index).or_default();
            if *fires >= max {
                // The route's own budget, declared so its loop cannot run forever.
                self.stop(&format!("route_budget:{}", route.index + 1));
                return;
            }
            *fires += 1;
        }
        match &route.action {
            Action::Spawn { role } => {
                if let Some(reason) = self.spent_budget(std::slice::from_ref(role)) {
                    self.stop(reason);
                    return;
                }
                let feedback = if route.with_feedback { feedback } else { None };
                self.spawn(role, cause, feedback, Vec::new());
            }
            Action::SpawnAll { roles } => self.spawn_all(route, roles, feedback, cause),
            Action::Join { mode, combine } => self.join(*mode, *combine, feedback),
            Action::RunQa => self.run_qa(0, 0),
            Action::Done { outcome, reason } => self.finish(*outcome, reason),
            Action::AwaitHuman => {
                let on = match &route.trigger {
                    Trigger::Verdict { .. } => "verdict".to_owned(),
                    Trigger::Kind { kind, .. } => kind.clone(),
                };
                let verdict = self
                    .state
                    .verification
                    .latest
                    .as_ref()
                    .filter(|_| on == "verdict");
                let judge_event_id =
                    verdict.map_or_else(|| self.event.id.clone(), |v| v.event_id.clone());
                let body = match verdict {
                    Some(v) => format!(
                        "verdict {} (aggregate {}) needs a person: /approve to accept, /veto <reason> to repair",
                        v.corrected.verdict, v.corrected.aggregate
                    ),
                    None if on == QA_ERROR_TRIGGER => self.qa_error_message(),
                    None if self
                        .table
                        .route_for(Kind::UserAnswer.as_str(), "user")
                        .is_some() =>
                    {
                        format!("`{on}` needs a person: /answer <text> to answer")
                    }
                    None => format!("`{on}` needs a person: /veto <reason> to answer"),
                };
                self.await_person(on, judge_event_id, &body);
            }
        }
    }

    /// Run the pipeline's QA on the latest build; `attempt` > 0 retries a run that could not run.
    pub(in crate::engine) fn run_qa(&mut self, attempt: u32, delay_ms: u64) {
        let build_event_id = if self.table.slot(self.event.kind.as_str()) == Some(Slot::Build) {
            self.event.id.clone()
        } else {
            self.state
                .build
                .as_ref()
                .map_or_else(|| self.event.id.clone(), |b| b.event_id.clone())
        };
        let id = self.next_id();
        self.effects.push(Effect::RunQa(RunQa {
            id,
            build_event_id,
            entry: self.table.qa.as_ref().and_then(|qa| qa.entry.clone()),
            ac_predicates: self
                .state
                .plan
                .as_ref()
                .map(|s| s.ac_predicates.clone())
                .unwrap_or_default(),
            attempt,
            delay_ms,
        }));
    }

    /// Wait for a person: the awaiting state and the `session.awaiting` event that says why.
    pub(super) fn await_person(&mut self, on: String, judge_event_id: String, body: &str) {
        let mut data = Map::new();
        data.insert("reason".into(), json!("await_human"));
        data.insert("judge_event_id".into(), json!(judge_event_id));
        self.state.awaiting = Some(Awaiting { judge_event_id, on });
        self.append(
            Draft::new("system", Kind::SessionAwaiting)
                .body(body)
                .data(data),
        );
    }

    /// A `done:` route: its declared outcome, unless the evidence forbids a pass. A pass needs the
    /// latest QA run to have passed (`pass_requires_qa`, when the pipeline has QA), and can never
    /// rest on the mock's placeholder after a real adapter failed. Each downgrade is audited.
    pub(in crate::engine) fn finish(&mut self, outcome: Outcome, reason: &str) {
        if outcome == Outcome::Pass {
            let qa_required = self.table.qa.is_some()
                && self.table.scoring.guards.contains(&Guard::PassRequiresQa);
            if qa_required && !self.state.qa.as_ref().is_some_and(QaSnapshot::passed) {
                self.downgrade(reason, "pass_without_qa", "the latest QA run did not pass");
                return;
            }
            if let Some(role) = self.state.degraded_to_mock().map(str::to_owned) {
                let why = format!(
                    "{role} ran on the mock after its own adapter failed; the mock's artifact is a placeholder"
                );
                self.downgrade(reason, &format!("degraded_to_mock:{role}"), &why);
                return;
            }
        }
        self.end(outcome, reason);
    }

    /// A declared pass the evidence forbids: one `audit` event, then outcome `fail`.
    fn downgrade(&mut self, declared: &str, reason: &str, why: &str) {
        let mut data = Map::new();
        data.insert("event".into(), json!("pass_downgraded"));
        data.insert("declared_reason".into(), json!(declared));
        data.insert("outcome".into(), json!(Outcome::Fail));
        data.insert("reason".into(), json!(reason));
        let metadata = Metadata {
            audit_violations: vec![reason.to_owned()],
            ..Metadata::default()
        };
        self.append(
            Draft::new("validator", Kind::Audit)
                .body(format!(
                    "pass ({declared}) refused: {why} → fail ({reason})"
                ))
                .data(data)
                .metadata(metadata),
        );
        self.end(Outcome::Fail, reason);
    }

    /// `judge.score`: guards, one audit event for every correction, then the first kind route
    /// `on: judge.score` matching the sender, else the verdict route.
    fn judge(&mut self) {
        let event = self.event;
        let Some((verdict, severity)) = self.assess(true) else {
            return;
        };
        let scores = event.scores.as_ref();
        let feedback = Feedback {
            source_event_id: event.id.clone(),
            verdict,
            severity,
            text: clip(
                scores
                    .and_then(|s| s.feedback.as_deref())
                    .or(event.body.as_deref())
                    .unwrap_or("verification failed"),
                MAX_TEXT,
            ),
            suggested_change: scores
                .and_then(|s| s.suggested_change.as_deref())
                .map(|s| clip(s, MAX_TEXT)),
        };
        let route = self.table.route_for(Kind::JudgeScore.as_str(), &event.from);
        let joins = route.is_some_and(|r| matches!(r.action, Action::Join { .. }));
        // A verdict that will be routed answers what was waiting; a late branch of a round that
        // already joined is only recorded, so a person's pending question stays pending.
        if !joins || self.fan_out_takes(&event.from) {
            self.state.awaiting = None;
        }
        if !joins {
            // This verdict is routed on its own: an earlier join's verdict is no longer the one
            // the routes acted on.
            self.state.verification.routed_join = None;
        }
        if let Some(route) = route {
            self.fire(route, Some(feedback), SpawnCause::Route);
            return;
        }
        self.route_verdict(verdict, severity, feedback);
    }

    /// The verdict route for a corrected (or joined) verdict; a repair past `max_verify` stops.
    pub(super) fn route_verdict(
        &mut self,
        verdict: Verdict,
        severity: Severity,
        feedback: Feedback,
    ) {
        let Some(route) = self.table.route_for_verdict(verdict, severity) else {
            let mut data = Map::new();
            data.insert("verdict".into(), json!(verdict));
            data.insert("severity".into(), json!(severity));
            self.hook(
                "unrouted_verdict",
                format!("no route handles {verdict} × {severity}"),
                data,
            );
            return;
        };
        let repairs = matches!(
            route.action,
            Action::Spawn { .. } | Action::SpawnAll { .. } | Action::RunQa
        );
        if repairs && self.state.verification.count >= self.table.limits.max_verify {
            self.stop("too_many_verify");
            return;
        }
        self.fire(route, Some(feedback), SpawnCause::Route);
    }

    /// Apply the guards to a `judge.score` and record the verdict. With `live`, corrections are
    /// also published in an `audit` event and the corrected verdict and severity are returned for
    /// routing; a terminal session only records (so replay still shows the last verdict).
    pub(super) fn assess(&mut self, live: bool) -> Option<(Verdict, Severity)> {
        let event = self.event;
        let scores = event.scores.as_ref();
        let raw = RawScores {
            dimensions: self
                .table
                .scoring
                .rubric
                .iter()
                .map(|dim| scores.and_then(|s| s.score(&dim.id)).map(|d| d.score))
                .collect(),
            aggregate: scores.and_then(|s| s.aggregate),
            verdict: scores.and_then(|s| s.verdict),
        };
        let declared = scores.and_then(|s| s.deviation).map(|d| d.kind);
        let severity = declared.unwrap_or(Severity::Important);
        let evidence = Evidence {
            qa_exit_code: self.state.qa.as_ref().and_then(|q| q.exec_exit_code),
            ac_failed: self.state.qa.as_ref().is_some_and(|q| q.ac_failed > 0),
            judge_provider: event.metadata.as_ref().and_then(|m| m.provider.as_deref()),
            builder_provider: self
                .state
                .build
                .as_ref()
                .and_then(|b| b.provider.as_deref()),
            rework: guards::Rework {
                respecs: self.state.budgets.respecs,
                builds: self.state.budgets.builds,
                vetoes: self.state.budgets.vetoes,
            },
        };
        let judgement = guards::judge(&self.table.scoring, &raw, &evidence);
        let verdict = judgement.corrected.verdict;

        if live && !judgement.corrections.is_empty() {
            self.audit(&raw, &judgement);
        }
        let record = VerdictRecord {
            event_id: event.id.clone(),
            from: event.from.clone(),
            raw,
            corrected: judgement.corrected,
            corrections: judgement.corrections,
            severity,
            severity_defaulted: declared.is_none(),
        };
        let verification = &mut self.state.verification;
        verification.count += 1;
        verification.previous = verification.latest.replace(record);
        if !live {
            return None;
        }
        Some((verdict, severity))
    }

    fn audit(&mut self, raw: &RawScores, judgement: &guards::Judgement) {
        let tags: Vec<String> = judgement
            .corrections
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect();
        let corrected = &judgement.corrected;
        let mut data = Map::new();
        data.insert("corrections".into(), json!(tags));
        data.insert(
            "raw".into(),
            json!({ "dimensions": raw.dimensions, "aggregate": raw.aggregate, "verdict": raw.verdict }),
        );
        data.insert(
            "corrected".into(),
            json!({ "dimensions": corrected.dimensions, "aggregate": corrected.aggregate, "verdict": corrected.verdict }),
        );
        let body = format!(
            "corrected {}: {} {} → {} {}",
            tags.join(", "),
            raw.verdict
                .map_or_else(|| "(no verdict)".to_owned(), |v| v.to_string()),
            raw.aggregate
                .map_or_else(|| "(no aggregate)".to_owned(), |a| a.to_string()),
            corrected.verdict,
            corrected.aggregate,
        );
        let metadata = Metadata {
            audit_violations: tags,
            ..Metadata::default()
        };
        self.append(
            Draft::new("validator", Kind::Audit)
                .body(body)
                .data(data)
                .metadata(metadata),
        );
    }
}
