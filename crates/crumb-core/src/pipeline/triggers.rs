//! The words a route's `on:` is matched against that the compiler, the checks, the graph and the
//! engine all name: the kinds routes key on by name, and the two words that are not event kinds.
//! They live apart from all of those so none has to import another for a constant.

/// The word `on:` uses for the corrected verdict of a `judge.score`.
pub const VERDICT_TRIGGER: &str = "verdict";
/// The word `on:` uses for a `qa.result` whose checks could not run (status `error`), once
/// `qa.retry` is spent. Not an event kind: the event is the `qa.result`.
pub const QA_ERROR_TRIGGER: &str = "qa.error";

/// The kind a person's pitch arrives as; every run starts with it.
pub const GOAL_KIND: &str = "goal";
/// The kind QA writes when `run: qa` finishes.
pub const QA_RESULT_KIND: &str = "qa.result";
/// The kind whose corrected verdict `on: verdict` routes handle.
pub const JUDGE_SCORE_KIND: &str = "judge.score";
