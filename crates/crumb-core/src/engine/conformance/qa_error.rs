//! C28–C32: a `qa.result` whose checks could not run (status `error`) is the machine's fault, not
//! the build's: retried with backoff, never a verification or a repair, then the declared
//! `qa.error` route or a person.

use serde_json::json;

use super::declared::table;
use crate::engine::effect::{Effect, RunQa};
use crate::engine::testkit::{PASS_DIMS, Script, ack, appended, data, scores, spawned};
use crate::transcript::Kind;
use crate::vocab::Verdict;

const WHY: &str = "Chromium did not become ready within 15 s";

impl Script {
    /// A `qa.result` whose checks could not run.
    fn qa_error(&mut self) -> Vec<Effect> {
        self.send("system", Kind::QaResult, |e| {
            e.data = Some(data(
                json!({"exec_exit_code": 3, "status": "error", "error": WHY}),
            ));
        })
    }
}

fn qa_runs(effects: &[Effect]) -> Vec<&RunQa> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunQa(run) => Some(run),
            _ => None,
        })
        .collect()
}

/// `(attempt, delay_ms)` of every QA run among `effects`.
fn retries(effects: &[Effect]) -> Vec<(u32, u64)> {
    qa_runs(effects)
        .iter()
        .map(|r| (r.attempt, r.delay_ms))
        .collect()
}

/// Goal, spec and build: QA has just been asked for.
fn built() -> Script {
    let mut s = Script::new();
    s.goal();
    s.spec();
    s.build(None);
    s
}

#[test]
fn c28_a_qa_error_is_retried_with_backoff_and_never_reaches_the_verifier() {
    let mut s = built();
    let build_id = s.state.build.as_ref().unwrap().event_id.clone();
    let first = s.qa_error();
    assert!(spawned(&first).is_empty(), "{first:#?}");
    let retry = qa_runs(&first);
    assert_eq!(retry.len(), 1, "{first:#?}");
    assert_eq!((retry[0].attempt, retry[0].delay_ms), (1, 1000));
    assert_eq!(retry[0].build_event_id, build_id);
    // The retry's id derives from the qa.result it answers: resume re-issues exactly it.
    assert_eq!(
        retry[0].id,
        format!("{}:0", crate::engine::testkit::id(s.n))
    );
    let second = s.qa_error();
    assert_eq!(retries(&second), [(2, 4000)]);
    assert_eq!(s.state.verification.count, 0);
    assert_eq!(s.state.budgets.errors_total, 0);
    assert_eq!(s.state.budgets.errors_in_a_row, 0);
    let builder = s.state.roles.get("builder").cloned().unwrap_or_default();
    assert_eq!((builder.failures_total, builder.failures_in_a_row), (0, 0));
    assert!(!s.state.qa.as_ref().unwrap().passed());
}

#[test]
fn c29_spent_retries_wait_for_a_person_naming_the_cause() {
    let mut s = built();
    s.qa_error();
    s.qa_error();
    let last = s.qa_error();
    assert!(
        qa_runs(&last).is_empty() && spawned(&last).is_empty(),
        "{last:#?}"
    );
    let awaiting = appended(&last, Kind::SessionAwaiting);
    assert_eq!(awaiting.len(), 1, "{last:#?}");
    let body = awaiting[0].body.as_deref().unwrap();
    assert!(body.starts_with("QA could not run (3 tries): "), "{body}");
    assert!(body.contains(WHY) && body.contains("/redo"), "{body}");
    let waiting = s.state.awaiting.as_ref().expect("awaits a person");
    assert_eq!(waiting.on, "qa.error");
    assert!(s.state.done.is_none());
    assert_eq!(s.state.verification.count, 0);

    // Approving is refused (nothing was judged); /redo runs QA again with fresh retries.
    let approve = s.user(Kind::UserApprove, "", serde_json::Value::Null);
    let (ok, text) = ack(&approve);
    assert!(!ok && text.contains("/redo"), "{text}");
    let redo = s.user(Kind::UserIntervene, "", json!({"redo": true}));
    assert_eq!(retries(&redo), [(0, 0)]);
    assert!(s.state.awaiting.is_none());
    assert_eq!(s.state.budgets.qa_errors_in_a_row, 0);
    let retry = s.qa_error();
    assert_eq!(qa_runs(&retry)[0].attempt, 1);
}

#[test]
fn c30_a_run_that_checks_after_an_error_routes_as_usual_and_counts_once() {
    let mut s = built();
    s.qa_error();
    let effects = s.qa(0);
    assert_eq!(spawned(&effects), ["verifier"]);
    assert_eq!(s.state.budgets.qa_errors_in_a_row, 0);
    let effects = s.judge(scores(PASS_DIMS, Verdict::Pass, None, None));
    assert_eq!(
        crate::engine::testkit::done_reason(&effects),
        Some("verdict_pass")
    );
    assert_eq!(s.state.verification.count, 1);
}

const DECLARED: &str = r"
version: 1
name: qa-error-declared
roles:
  builder: { template: b.md.j2, produces: [build] }
  judge: { template: j.md.j2, produces: [judge.score] }
qa:
  checks: [{ id: boots, kind: browser }]
  entry: index.html
  retry: { max: 1, backoff: 2s }
routes:
  - { on: goal, spawn: builder }
  - { on: build, run: qa }
  - { on: qa.result, spawn: judge }
  - { on: qa.error, done: { outcome: fail, reason: qa_could_not_run } }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, spawn: builder, with: feedback }
";

#[test]
fn c31_a_declared_qa_error_route_fires_once_the_declared_retries_are_spent() {
    let mut s = Script::with(table(DECLARED));
    s.goal();
    s.build(None);
    let first = s.qa_error();
    assert_eq!(retries(&first), [(1, 2000)]);
    let second = s.qa_error();
    assert_eq!(
        crate::engine::testkit::done_reason(&second),
        Some("qa_could_not_run")
    );
    assert!(spawned(&second).is_empty());
}

#[test]
fn c32_a_new_build_starts_the_retries_over() {
    let mut s = Script::with(table(DECLARED));
    s.goal();
    s.build(None);
    s.qa_error();
    s.build(None);
    assert_eq!(s.state.budgets.qa_errors_in_a_row, 0);
    assert_eq!(qa_runs(&s.qa_error())[0].attempt, 1);
}
