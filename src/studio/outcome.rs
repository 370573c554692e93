//! A session's outcome in words, decided in one place so the list, the header, the banner and the
//! page title can never disagree: passed, failed (and why, in plain words), waiting for a person
//! (and what to do), running (who, since when), stopped by a budget (which), interrupted. Degraded
//! runs (an adapter swapped away, roles on the mock adapter) carry marks.

use serde::Serialize;

use crate::engine::state::{MOCK_ADAPTER, State};
use crate::pipeline::table::LimitsSpec;
use crate::vocab::Outcome as Declared;

/// What a session is, for a person, at a glance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Outcome {
    /// `passed`, `failed`, `partial`, `rejected`, `stopped`, `waiting`, `paused`, `running`,
    /// `interrupted`, `error` or `unknown`: the CSS class and the test hook.
    pub kind: &'static str,
    /// `good`, `bad`, `warn`, `live` or `idle`: the colour.
    pub tone: &'static str,
    /// A few words: "Passed", "Failed", "Waiting for you", …
    pub title: String,
    /// Why, in plain words.
    pub detail: String,
    /// The engine's reason code, shown on hover.
    pub code: Option<String>,
    /// What a person can do next, when anything.
    pub action: Option<String>,
    /// Whether the session can still move (a coordinator may take it over): Resume applies.
    pub resumable: bool,
    /// Degradations: adapter swaps and roles on the mock adapter.
    pub marks: Vec<Mark>,
    /// When the live turn began (RFC 3339), for a running session: the page shows it as a
    /// relative time that keeps moving, never as a raw timestamp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// `crumb why`'s first line, for the banner's detail (the session view only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// One degradation a run must never hide.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Mark {
    /// `degraded` (a swap) or `mock` (placeholder agents).
    pub kind: &'static str,
    pub text: String,
}

/// What besides the folded state decides the outcome.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Context<'a> {
    /// The list's status (`running`, `awaiting`, `done`, `dead`, `error`).
    pub status: &'a str,
    /// A coordinator holds the session's lock.
    pub live: bool,
    pub limits: Option<&'a LimitsSpec>,
    /// The role whose turn is live, and since when (`agent.wake`'s timestamp).
    pub running: Option<(&'a str, &'a str)>,
}

/// The outcome of a session in `state`.
pub(crate) fn outcome(state: &State, ctx: &Context<'_>) -> Outcome {
    let marks = marks(state);
    let mut out = if let Some(done) = &state.done {
        ended(state, done.outcome, &done.reason, ctx)
    } else if let Some(awaiting) = &state.awaiting {
        let detail = if awaiting.is_verdict() {
            match &state.verification.latest {
                Some(v) => format!(
                    "{} said {} at {:.1} (engine-corrected) and the pipeline asks a person",
                    judged_by(state),
                    v.corrected.verdict.as_str(),
                    v.corrected.aggregate
                ),
                None => "the pipeline asks a person to decide".to_owned(),
            }
        } else {
            format!("a person's answer to `{}` is awaited", awaiting.on)
        };
        let action = if awaiting.is_verdict() {
            "Approve to accept it as it is, or veto with a reason to send it back"
        } else {
            "Answer in the command bar"
        };
        let action = if ctx.live {
            action.to_owned()
        } else {
            format!("{action}; then Resume (no coordinator is running)")
        };
        base(
            "waiting",
            "warn",
            "Waiting for you",
            detail,
            None,
            Some(action),
        )
    } else if ctx.status == "error" {
        base(
            "error",
            "bad",
            "Error",
            "the session's files could not be read".to_owned(),
            None,
            None,
        )
    } else if !ctx.live && ctx.status != "running" {
        base(
            "interrupted",
            "warn",
            "Interrupted",
            "no coordinator is running and the session has not ended".to_owned(),
            None,
            Some("Resume to continue where it stopped".to_owned()),
        )
    } else if state.paused {
        base(
            "paused",
            "warn",
            "Paused",
            "every spawn is held".to_owned(),
            None,
            Some("/resume to continue".to_owned()),
        )
    } else {
        let detail = match ctx.running {
            Some((role, _)) => format!("{role} is working"),
            None => state
                .next_role
                .as_ref()
                .map_or_else(|| "starting".to_owned(), |role| format!("next: {role}")),
        };
        base("running", "live", "Running", detail, None, None)
    };
    out.resumable = state.done.is_none() && !ctx.live;
    if out.kind == "running" {
        out.since = ctx.running.map(|(_, since)| since.to_owned());
    }
    out.marks = marks;
    out
}

fn base(
    kind: &'static str,
    tone: &'static str,
    title: &str,
    detail: String,
    code: Option<String>,
    action: Option<String>,
) -> Outcome {
    Outcome {
        kind,
        tone,
        title: title.to_owned(),
        detail,
        code,
        action,
        resumable: false,
        marks: Vec::new(),
        since: None,
        why: None,
    }
}

/// An ended session: its declared outcome, read together with the reason.
fn ended(state: &State, declared: Option<Declared>, reason: &str, ctx: &Context<'_>) -> Outcome {
    let code = Some(reason.to_owned());
    let words = reason_words(state, reason, ctx.limits);
    if let Some(role) = reason.strip_prefix("circuit_open:") {
        return base(
            "failed",
            "bad",
            "Failed",
            circuit_words(state, role),
            code,
            None,
        );
    }
    if is_budget(reason) {
        return base("stopped", "bad", "Stopped by a budget", words, code, None);
    }
    match declared {
        Some(Declared::Pass) => base("passed", "good", "Passed", words, code, None),
        Some(Declared::Fail) => base("failed", "bad", "Failed", words, code, None),
        Some(Declared::Partial) => base("partial", "warn", "Partly done", words, code, None),
        Some(Declared::Rejected) => base("rejected", "bad", "Rejected", words, code, None),
        Some(Declared::Stopped) => base("stopped", "bad", "Stopped", words, code, None),
        None => base("unknown", "idle", "Ended", words, code, None),
    }
}

/// Whether the engine stopped the run because a budget or limit ran out.
fn is_budget(reason: &str) -> bool {
    matches!(
        reason,
        "too_many_verify" | "too_many_respec" | "token_exhausted" | "wall_clock_exhausted"
    ) || reason.starts_with("route_budget:")
}

/// "the builder failed 6 times; circuit opened after swapping claude-code → mock".
fn circuit_words(state: &State, role: &str) -> String {
    let failures = state.roles.get(role).map_or(0, |r| r.failures_total);
    let swaps: Vec<String> = state
        .swaps
        .iter()
        .filter(|s| s.role == role)
        .map(|s| format!("{} → {}", s.from.as_deref().unwrap_or("?"), s.to))
        .collect();
    let after = if swaps.is_empty() {
        String::new()
    } else {
        format!(" after swapping {}", swaps.join(", then "))
    };
    format!(
        "the {role} failed {failures} time{}; circuit opened{after}",
        if failures == 1 { "" } else { "s" }
    )
}

/// Who judged the verdict the routes last acted on, by the roles the pipeline declares: the joined
/// judges ("judge-a and judge-b (combined: `all_pass`)") or the one judge's role.
fn judged_by(state: &State) -> String {
    if let Some(join) = &state.verification.routed_join {
        // Sorted: branches report in whatever order they finish, the words should not change.
        let mut roles: Vec<&str> = join.branches.iter().map(|b| b.role.as_str()).collect();
        roles.sort_unstable();
        return format!("{} (combined: {})", roles.join(" and "), join.combine);
    }
    match state.verification.latest.as_ref().map(|v| v.from.as_str()) {
        Some(role) if !role.is_empty() => role.to_owned(),
        _ => "the judge".to_owned(),
    }
}

/// A reason code in plain words (the code itself is shown on hover).
pub(crate) fn reason_words(state: &State, reason: &str, limits: Option<&LimitsSpec>) -> String {
    let score = state
        .verification
        .latest
        .as_ref()
        .map(|v| (v.corrected.verdict.as_str(), v.corrected.aggregate));
    let limit =
        |f: fn(&LimitsSpec) -> u64| limits.map_or_else(|| "?".to_owned(), |l| f(l).to_string());
    match reason {
        "verdict_pass" => match score {
            Some((_, agg)) => format!(
                "{} passed it at {agg:.1} (engine-corrected)",
                judged_by(state)
            ),
            None => format!("{} passed it", judged_by(state)),
        },
        "approved" => match score {
            Some((verdict, agg)) => {
                format!(
                    "approved by a person; {} had said {verdict} at {agg:.1}",
                    judged_by(state)
                )
            }
            None => "approved by a person".to_owned(),
        },
        "rejected" => format!("{} rejected it", judged_by(state)),
        _ if reason.starts_with("verdict_") && score.is_some() => {
            let (verdict, agg) = score.unwrap_or(("?", 0.0));
            format!(
                "the verdict was {verdict} at {agg:.1} (engine-corrected), from {}",
                judged_by(state)
            )
        }
        "pass_without_qa" => "a pass was claimed without a successful QA run".to_owned(),
        "too_many_verify" => format!(
            "{} verifications without a pass (the limit is {})",
            state.verification.count,
            limit(|l| u64::from(l.max_verify))
        ),
        "too_many_respec" => format!(
            "{} re-plans (the limit is {})",
            state.budgets.respecs,
            limit(|l| u64::from(l.max_respec))
        ),
        "token_exhausted" => format!(
            "{} tokens used (the hard limit is {})",
            state.budgets.tokens,
            limit(|l| l.tokens_hard)
        ),
        "wall_clock_exhausted" => format!(
            "the session ran out of time (the limit is {} min)",
            limits.map_or_else(
                || "?".to_owned(),
                |l| (l.wall_clock_hard_ms / 60_000).to_string()
            )
        ),
        "idle" => "nothing happened for too long; the coordinator gave up".to_owned(),
        _ => {
            if let Some(role) = reason.strip_prefix("degraded_to_mock:") {
                format!("the {role} ran on the mock adapter (placeholder work), so it cannot pass")
            } else if let Some(n) = reason.strip_prefix("route_budget:") {
                format!("route {n} fired as often as its `max:` allows")
            } else if let Some(role) = reason.strip_prefix("circuit_open:") {
                circuit_words(state, role)
            } else if let Some(rest) = reason.strip_prefix("idle:") {
                format!("nothing happened for too long ({rest})")
            } else {
                reason.replace(['_', ':'], " ")
            }
        }
    }
}

/// Swaps and roles on the mock adapter.
fn marks(state: &State) -> Vec<Mark> {
    let mut marks: Vec<Mark> = state
        .swaps
        .iter()
        .map(|s| Mark {
            kind: "degraded",
            text: format!(
                "{} ran on {} instead of {} ({})",
                s.role,
                s.to,
                s.from.as_deref().unwrap_or("?"),
                if s.cause == "person" {
                    "swapped by a person"
                } else {
                    "its own adapter kept failing"
                }
            ),
        })
        .collect();
    let mock: Vec<&str> = state
        .bound_adapters
        .iter()
        .filter(|(role, adapter)| {
            adapter.as_str() == MOCK_ADAPTER && !state.swaps.iter().any(|s| &s.role == *role)
        })
        .map(|(role, _)| role.as_str())
        .collect();
    if !mock.is_empty() {
        marks.push(Mark {
            kind: "mock",
            text: format!(
                "on the mock adapter (placeholder agents, no real model): {}",
                mock.join(", ")
            ),
        });
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::state::{Awaiting, RoleState, Swap, Terminal};

    fn ended(outcome: Option<Declared>, reason: &str) -> State {
        State {
            done: Some(Terminal {
                outcome,
                reason: reason.to_owned(),
                event_id: "E".to_owned(),
                recorded_reason: None,
            }),
            ..State::default()
        }
    }

    fn ctx(status: &str, live: bool) -> Context<'_> {
        Context {
            status,
            live,
            ..Context::default()
        }
    }

    #[test]
    fn a_circuit_stop_is_a_failure_in_words_with_its_swap() {
        let mut state = ended(Some(Declared::Stopped), "circuit_open:builder");
        state.roles.insert(
            "builder".into(),
            RoleState {
                failures_total: 6,
                ..RoleState::default()
            },
        );
        state.swaps.push(Swap {
            role: "builder".into(),
            from: Some("claude-code".into()),
            to: "mock".into(),
            cause: "circuit_open".into(),
        });
        let out = outcome(&state, &ctx("done", false));
        assert_eq!((out.kind, out.tone), ("failed", "bad"));
        assert_eq!(
            out.detail,
            "the builder failed 6 times; circuit opened after swapping claude-code → mock"
        );
        assert_eq!(out.code.as_deref(), Some("circuit_open:builder"));
        assert!(!out.resumable);
        assert_eq!(out.marks[0].kind, "degraded");
    }

    #[test]
    fn budgets_stop_and_passes_pass() {
        let out = outcome(
            &ended(Some(Declared::Stopped), "too_many_verify"),
            &ctx("done", false),
        );
        assert_eq!(
            (out.kind, out.title.as_str()),
            ("stopped", "Stopped by a budget")
        );
        let out = outcome(
            &ended(Some(Declared::Pass), "approved"),
            &ctx("done", false),
        );
        assert_eq!((out.kind, out.tone), ("passed", "good"));
        assert!(out.detail.contains("approved by a person"));
    }

    #[test]
    fn a_wait_without_a_coordinator_says_resume() {
        let state = State {
            awaiting: Some(Awaiting {
                judge_event_id: "J".into(),
                on: "verdict".into(),
            }),
            ..State::default()
        };
        let out = outcome(&state, &ctx("awaiting", false));
        assert_eq!(out.kind, "waiting");
        assert!(out.resumable);
        assert!(out.action.unwrap_or_default().contains("Resume"));
        let live = outcome(&state, &ctx("running", true));
        assert!(!live.resumable);
        let dead = outcome(&State::default(), &ctx("dead", false));
        assert_eq!((dead.kind, dead.resumable), ("interrupted", true));
    }
}
