//! A `qa.result` whose checks could not run (`data.status: "error"`: no browser, a launch or page
//! timeout under load). It says nothing about the build, so it is never routed as a failed QA,
//! never counted as a verification and never starts a repair. Instead:
//!
//! 1. while `qa.retry.max` allows, the same QA runs again after a backoff (a new `RunQa` effect
//!    derived from this `qa.result`, so resume re-issues exactly a retry that has no result);
//! 2. then the first route `on: qa.error` fires;
//! 3. without one, the session waits for a person, saying why QA could not run. `/redo` runs QA
//!    again (the retries start over); `/veto <reason>` sends the build back as usual.

use super::Step;
use crate::engine::effect::SpawnCause;
use crate::pipeline::triggers::QA_ERROR_TRIGGER;

/// `data.status` of a `qa.result` whose checks could not run.
pub const QA_STATUS_ERROR: &str = "error";

impl Step<'_> {
    pub(super) fn qa_could_not_run(&mut self) {
        let attempts = self.state.budgets.qa_errors_in_a_row;
        if let Some(retry) = self.table.qa.as_ref().map(|qa| qa.retry)
            && attempts <= retry.max
        {
            self.run_qa(attempts, retry.delay_ms(attempts));
            return;
        }
        if let Some(route) = self.table.route_for(QA_ERROR_TRIGGER, &self.event.from) {
            self.fire(route, None, SpawnCause::Route);
            return;
        }
        let body = self.qa_error_message();
        self.await_person(QA_ERROR_TRIGGER.to_owned(), self.event.id.clone(), &body);
    }

    /// What a person is told when QA could not run: the cause first, then what to do.
    pub(in crate::engine) fn qa_error_message(&self) -> String {
        let attempts = self.state.budgets.qa_errors_in_a_row;
        let problem = self
            .state
            .qa
            .as_ref()
            .and_then(|qa| qa.problem.as_deref())
            .unwrap_or("the checks could not run");
        let veto = if self.table.route_for("user.veto", "user").is_some() {
            ", or /veto <reason> to send the build back"
        } else {
            ""
        };
        let tries = if attempts == 1 { "try" } else { "tries" };
        format!(
            "QA could not run ({attempts} {tries}): {problem} — this is not the build's fault; fix it, then /redo to run QA again{veto}"
        )
    }

    /// `/redo` while the session waits because QA could not run: run it again, retries anew.
    /// Returns whether it applied.
    pub(in crate::engine) fn redo_qa(&mut self) -> bool {
        if self
            .state
            .awaiting
            .as_ref()
            .is_none_or(|a| a.on != QA_ERROR_TRIGGER)
        {
            return false;
        }
        self.state.awaiting = None;
        self.state.budgets.qa_errors_in_a_row = 0;
        self.run_qa(0, 0);
        true
    }
}
