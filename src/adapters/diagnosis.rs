//! Why a turn failed, in classes a person (and the engine) can act on, with the CLI's own words.
//!
//! Each CLI says what went wrong in its own way (a Claude `result` with `api_error_status`, a
//! Codex `error` line, a Gemini exit code and a hint on stderr); the stream parsers collect those
//! words as a [`Problem`], and [`diagnose`] turns them plus the process outcome into one
//! [`TurnFailure`]. What is generic (the words and HTTP statuses every CLI uses) is here; what
//! one CLI's exit codes mean and how to log it in is asked of its `Adapter`. Auth,
//! input-too-large and no-network failures cannot be fixed by trying again, so they are not
//! retried: the role stops with the CLI's message and a hint.

use super::AdapterKind;
pub(crate) use super::problem::{FailureClass, MAX_WORDS, Problem, RetryNotices, class_of_text};
use super::turn::{Terminal, TurnSummary};
use crate::process::Outcome;

/// One failed turn, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnFailure {
    pub class: FailureClass,
    /// The CLI's own words when it gave any, else crumb's account of the outcome.
    pub message: String,
    /// What a person can do about it.
    pub hint: Option<String>,
}

/// The fix to suggest for `class` on `kind`.
pub(crate) fn hint(kind: AdapterKind, class: FailureClass) -> Option<String> {
    let text = match class {
        FailureClass::Auth => return kind.adapter().auth_hint().map(str::to_owned),
        FailureClass::Quota => {
            "the account hit a rate limit or its quota: wait, check its plan and billing, or bind the role to another adapter"
        }
        FailureClass::Network => {
            "the model API cannot be reached: check the network, a proxy, or the base URL the CLI is pointed at"
        }
        FailureClass::InputTooLarge => {
            "the prompt is larger than the CLI accepts: shorten the pitch or the context the role `sees`"
        }
        FailureClass::Timeout => {
            "raise the role's `timeout:` (or --wall-timeout / --idle-timeout) if the work is genuinely long"
        }
        FailureClass::Model | FailureClass::Protocol | FailureClass::Crash => return None,
    };
    Some(text.to_owned())
}

/// Classify a failed turn from the process outcome and what the CLI said; `None` when the turn
/// succeeded. `produced`: whether the role emitted one of its `produces` kinds.
pub(crate) fn diagnose(
    kind: AdapterKind,
    outcome: &Outcome,
    summary: &TurnSummary,
    stderr_tail: &str,
    produced: bool,
) -> Option<TurnFailure> {
    let stated = stated_problem(kind, outcome, summary, stderr_tail);
    let (class, own) = match outcome {
        Outcome::Cancelled => return None,
        Outcome::Exited { code: 0 } if produced => return None,
        Outcome::MissingBinary { program } => (
            FailureClass::Crash,
            format!("`{program}` is not installed or not on PATH"),
        ),
        Outcome::SpawnError { message } => (FailureClass::Crash, message.clone()),
        Outcome::WallTimeout => (
            FailureClass::Timeout,
            "ran past its wall-clock timeout".to_owned(),
        ),
        Outcome::IdleTimeout => (
            FailureClass::Timeout,
            "made no progress within its idle timeout (retry notices do not count)".to_owned(),
        ),
        Outcome::GaveUp => (
            FailureClass::Crash,
            "stopped by crumb: retrying cannot fix this".to_owned(),
        ),
        Outcome::Signaled { signal } => (FailureClass::Crash, format!("killed by signal {signal}")),
        Outcome::Exited { code: 0 } => (
            FailureClass::Protocol,
            "the turn ended without emitting what the role produces".to_owned(),
        ),
        Outcome::Exited { code } => (FailureClass::Crash, format!("exited with code {code}")),
    };
    // What the CLI said outranks the outcome's class, except that a timeout stays a timeout
    // unless the CLI's words name a cause (a network that never came back).
    let class = match (&stated, class) {
        (
            Some(Problem {
                class: Some(said), ..
            }),
            _,
        ) => *said,
        (Some(_), FailureClass::Crash) if matches!(outcome, Outcome::Exited { .. }) => {
            FailureClass::Model
        }
        _ => class,
    };
    let message = match stated {
        Some(problem) if !problem.words.is_empty() => format!("{}: {}", problem.words, own),
        _ => own,
    };
    Some(TurnFailure {
        class,
        message,
        hint: hint(kind, class),
    })
}

/// The CLI's own account: its stream's problem, else its failed terminal event, else what a
/// known exit code or the end of stderr says.
fn stated_problem(
    kind: AdapterKind,
    outcome: &Outcome,
    summary: &TurnSummary,
    stderr_tail: &str,
) -> Option<Problem> {
    if let Some(problem) = &summary.problem {
        return Some(problem.clone());
    }
    if let Terminal::Failed { message } = &summary.terminal {
        return Some(Problem::new(None, message));
    }
    let exit = match outcome {
        Outcome::Exited { code } if *code != 0 => Some(*code),
        _ => None,
    };
    let by_exit = exit.and_then(|code| kind.adapter().exit_class(code));
    let stderr = last_words(stderr_tail);
    match (by_exit, stderr) {
        (None, None) => None,
        (class, Some(words)) => Some(Problem::new(class, &words)),
        (Some(class), None) => Some(Problem {
            class: Some(class),
            words: String::new(),
        }),
    }
}

/// The last few meaningful stderr lines (stack frames and blank lines dropped), joined.
fn last_words(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("at "))
        .collect();
    let start = lines.len().saturating_sub(3);
    let words = lines[start..].join(" ");
    (!words.is_empty()).then(|| words.chars().take(MAX_WORDS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(problem: Option<Problem>, terminal: Terminal) -> TurnSummary {
        TurnSummary {
            terminal,
            problem,
            ..TurnSummary::default()
        }
    }

    #[test]
    fn claude_not_logged_in_is_auth_in_its_own_words() {
        let said = summary(
            None,
            Terminal::Failed {
                message: "Not logged in · Please run /login".into(),
            },
        );
        let failure = diagnose(
            AdapterKind::ClaudeCode,
            &Outcome::Exited { code: 1 },
            &said,
            "",
            false,
        )
        .unwrap();
        assert_eq!(failure.class, FailureClass::Auth);
        assert_eq!(
            failure.message,
            "Not logged in · Please run /login: exited with code 1"
        );
        assert!(failure.hint.unwrap().contains("claude auth login"));
        assert!(!failure.class.retryable());
    }

    #[test]
    fn gemini_http_status_exits_are_not_signals() {
        let failure = diagnose(
            AdapterKind::GeminiCli,
            &Outcome::Exited { code: 144 },
            &TurnSummary::default(),
            "Error: [API Error: Bad Request]\n    at foo (x.js:1)\n",
            false,
        )
        .unwrap();
        assert_eq!(failure.class, FailureClass::Model);
        assert_eq!(
            failure.message,
            "Error: [API Error: Bad Request]: exited with code 144"
        );
        let auth = diagnose(
            AdapterKind::GeminiCli,
            &Outcome::Exited { code: 41 },
            &TurnSummary::default(),
            "Please set an Auth method in your settings.json or specify GEMINI_API_KEY",
            false,
        )
        .unwrap();
        assert_eq!(auth.class, FailureClass::Auth);
        assert!(auth.hint.unwrap().contains("GEMINI_API_KEY"));
    }

    #[test]
    fn timeouts_and_protocol_errors() {
        let idle = diagnose(
            AdapterKind::Codex,
            &Outcome::IdleTimeout,
            &TurnSummary::default(),
            "",
            false,
        )
        .unwrap();
        assert_eq!(idle.class, FailureClass::Timeout);
        let network = summary(
            Some(Problem::new(None, "Reconnecting... waiting for network")),
            Terminal::Missing,
        );
        let lost = diagnose(AdapterKind::Codex, &Outcome::GaveUp, &network, "", false).unwrap();
        assert_eq!(lost.class, FailureClass::Network);
        let quiet = diagnose(
            AdapterKind::Command,
            &Outcome::Exited { code: 0 },
            &TurnSummary::default(),
            "",
            false,
        )
        .unwrap();
        assert_eq!(quiet.class, FailureClass::Protocol);
        assert_eq!(
            diagnose(
                AdapterKind::Mock,
                &Outcome::Exited { code: 0 },
                &TurnSummary::default(),
                "",
                true
            ),
            None
        );
    }

    #[test]
    fn texts_classify() {
        for (text, class) in [
            ("Invalid API key · Fix external API key", FailureClass::Auth),
            (
                "input_too_large: Input exceeds 1048576 characters",
                FailureClass::InputTooLarge,
            ),
            (
                "exceeded retry limit, last status: 429 Too Many Requests",
                FailureClass::Quota,
            ),
            (
                "error sending request for url (http://127.0.0.1:1/v1/responses)",
                FailureClass::Network,
            ),
            ("API Error: 529 Overloaded", FailureClass::Model),
        ] {
            assert_eq!(class_of_text(text), Some(class), "{text}");
        }
        assert_eq!(class_of_text("all good"), None);
        assert_eq!(
            class_of_text("used 14012 tokens"),
            None,
            "a status stands alone"
        );
        // A status also ends with its sentence, or sits in brackets.
        assert_eq!(
            class_of_text("request failed with status 413."),
            Some(FailureClass::InputTooLarge)
        );
        assert_eq!(class_of_text("(429)"), Some(FailureClass::Quota));
        // Not a status: the milliseconds of a timestamp, a piece of an id, a larger number.
        for text in [
            "2026-12-01T20:13:58.401Z worker exited",
            "cannot write artifacts/01M8X401KQ.json",
            "wrote 1,429 rows",
            "took 12.413 s",
        ] {
            assert_eq!(class_of_text(text), None, "{text}");
        }
        // So a crash whose last words carry a timestamp is retried, not taken for a logout.
        let crash = diagnose(
            AdapterKind::Mock,
            &Outcome::Exited { code: 1 },
            &TurnSummary::default(),
            "mock-agent: 2026-12-01T20:13:58.401Z cannot write the game",
            false,
        )
        .unwrap();
        assert!(crash.class.retryable(), "{:?}", crash.class);
    }

    proptest::proptest! {
        /// The classifier never panics and keeps the CLI's words whole up to the bound.
        #[test]
        fn classifier_is_total(words in "\\PC{0,400}", code in -1i32..300, stderr in "\\PC{0,200}") {
            for &kind in AdapterKind::ALL {
                let said = summary(Some(Problem::new(None, &words)), Terminal::Missing);
                let failure = diagnose(kind, &Outcome::Exited { code }, &said, &stderr, false);
                if code != 0 || !words.trim().is_empty() {
                    let failure = failure.expect("a failed exit is a failure");
                    proptest::prop_assert!(failure.message.contains(words.trim()));
                }
            }
        }
    }
}
