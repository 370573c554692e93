//! What every agent-CLI adapter shares: the request for one turn, the process invocation it
//! becomes, the stream parser that reads its structured output, and the verdict on the turn.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::pipeline::preset::Effort;
use crate::process::{LineFlow, Outcome};
use crate::transcript::Metadata;

use super::AdapterKind;
use super::problem::Problem;

/// One turn of one role.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// The rendered prompt (the role's template).
    pub prompt: String,
    /// Where the rendered prompt was written (`prompts/<role>-<n>.md`).
    pub prompt_file: PathBuf,
    /// The session directory (the agent's working directory).
    pub session_dir: PathBuf,
    /// The role being run.
    pub role: String,
    pub model: Option<String>,
    pub effort: Option<Effort>,
    /// For the `command` adapter: the argv template (see [`super::command`]).
    pub command: Vec<String>,
    /// A model server to use instead of the vendor's API (a preset's `base_url`).
    pub endpoint: Option<Endpoint>,
}

/// A model server an agent CLI is pointed at: a local or self-hosted model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub base_url: String,
    /// The key sent to it (a placeholder when the binding names no key variable).
    pub api_key: String,
}

/// How to start the agent process for a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Adapter-specific variables (on top of the `CRUMB_*` ones).
    pub env: Vec<(OsString, OsString)>,
    /// Inherited variables the CLI must not see (nesting guards).
    pub env_remove: Vec<OsString>,
    /// Written to stdin, then closed; `None` connects stdin to `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// What the adapter had to change about the request (an effort level the CLI lacks),
    /// recorded as a `note` when the turn starts.
    pub notes: Vec<String>,
    /// Files written before the process starts (a settings file a CLI reads at startup).
    pub files: Vec<(PathBuf, String)>,
}

/// The adapter could not build an invocation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvocationError {
    #[error("the command adapter needs an argv (see `crumb explain crumb::command-without-argv`)")]
    EmptyCommand,
    #[error("cannot locate the crumb binary for the mock agent: {0}")]
    NoCrumb(String),
}

/// Token and cost accounting of one turn, normalised across CLIs: `tokens_in` never includes
/// cached input, which is counted in `cache_read`; `thinking_tokens` are the reasoning tokens
/// (Codex `reasoning_output_tokens`, Claude `thinkingTokens`). The one usage type: the dispatcher
/// records it in `agent.stop` metadata as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub thinking_tokens: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    pub cost_usd: Option<f64>,
    /// The model the CLI reports having used.
    pub model: Option<String>,
}

impl Usage {
    /// Record this usage in an `agent.stop`'s metadata (the model only when the CLI named one).
    pub(crate) fn write_to(&self, metadata: &mut Metadata) {
        metadata.tokens_in = self.tokens_in;
        metadata.tokens_out = self.tokens_out;
        metadata.thinking_tokens = self.thinking_tokens;
        metadata.cache_read = self.cache_read;
        metadata.cache_write = self.cache_write;
        metadata.cost_usd = self.cost_usd;
        if self.model.is_some() {
            metadata.model.clone_from(&self.model);
        }
    }

    /// The usage an `agent.stop` recorded.
    pub(crate) fn from_metadata(metadata: &Metadata) -> Usage {
        Usage {
            tokens_in: metadata.tokens_in,
            tokens_out: metadata.tokens_out,
            thinking_tokens: metadata.thinking_tokens,
            cache_read: metadata.cache_read,
            cache_write: metadata.cache_write,
            cost_usd: metadata.cost_usd,
            model: metadata.model.clone(),
        }
    }

    /// Add `other` (the later turn's model wins).
    pub(crate) fn absorb(&mut self, other: &Usage) {
        self.tokens_in = add(self.tokens_in, other.tokens_in);
        self.tokens_out = add(self.tokens_out, other.tokens_out);
        self.thinking_tokens = add(self.thinking_tokens, other.thinking_tokens);
        self.cache_read = add(self.cache_read, other.cache_read);
        self.cache_write = add(self.cache_write, other.cache_write);
        if let Some(cost) = other.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
        if other.model.is_some() {
            self.model.clone_from(&other.model);
        }
    }
}

/// A tool call seen in an agent's stream (becomes a `tool.call` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// The tool's name as the CLI reports it (`Bash`, `command_execution`, `write_file`, …).
    pub tool: String,
    /// The file path or command it acts on, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl ToolCall {
    /// `Tool target`, at most 200 characters.
    pub(crate) fn summary(&self) -> String {
        let text = match &self.target {
            Some(target) => format!("{} {target}", self.tool),
            None => self.tool.clone(),
        };
        if text.chars().count() > 200 {
            format!("{}…", text.chars().take(199).collect::<String>())
        } else {
            text
        }
    }
}

/// How the CLI itself said the turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Terminal {
    /// No terminal event (yet): for CLIs that have one, a failure when the process has ended.
    #[default]
    Missing,
    Success,
    Failed {
        message: String,
    },
    /// The output format has no terminal event (the `command` adapter); the exit code decides.
    NotApplicable,
}

/// Everything parsed from one turn's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSummary {
    pub usage: Usage,
    pub terminal: Terminal,
    /// The CLI's own session / thread id, for `metadata.adapter_session_id`.
    pub adapter_session_id: Option<String>,
    /// What the CLI said went wrong (an error line, a retry notice's cause), in its own words.
    pub problem: Option<Problem>,
}

/// Reads one CLI's stdout, line by line. Lines that are not JSON, or JSON it does not know, are
/// ignored (all three CLIs add event types between releases).
pub trait StreamParser: Send {
    /// Feed one stdout line; returns the tool calls it revealed.
    fn line(&mut self, line: &str) -> Vec<ToolCall>;
    /// What was learned so far.
    fn summary(&self) -> TurnSummary;
    /// How the last line fed counts: progress, retry chatter (which must not hold off the idle
    /// timeout), or a failure no retry of the CLI's can fix.
    fn flow(&self) -> LineFlow {
        LineFlow::Progress
    }
    /// Feed one stderr line (where some CLIs report their retries); returns how it counts.
    fn stderr_line(&mut self, _line: &str) -> LineFlow {
        LineFlow::Progress
    }
}

/// Why a turn failed, or `None` when it succeeded.
pub fn turn_failure(kind: AdapterKind, outcome: &Outcome, summary: &TurnSummary) -> Option<String> {
    let binary = kind.binary().unwrap_or("the agent");
    match outcome {
        Outcome::Exited { code: 0 } => match &summary.terminal {
            Terminal::Success | Terminal::NotApplicable => None,
            Terminal::Failed { message } => {
                Some(format!("{kind} reported a failed turn: {message}"))
            }
            Terminal::Missing => Some(format!("{kind} exited 0 without a terminal event")),
        },
        Outcome::Exited { code } => {
            let meaning = exit_meaning(kind, *code)
                .map(|meaning| format!(" ({meaning})"))
                .unwrap_or_default();
            let message = match &summary.terminal {
                Terminal::Failed { message } => format!(": {message}"),
                _ => String::new(),
            };
            Some(format!("{kind} exited {code}{meaning}{message}"))
        }
        Outcome::WallTimeout => Some(format!(
            "{kind} exceeded its wall-clock timeout and was killed"
        )),
        Outcome::IdleTimeout => Some(format!(
            "{kind} was silent past its idle timeout and was killed"
        )),
        Outcome::Cancelled => Some(format!("{kind} was cancelled")),
        Outcome::Signaled { signal } => Some(format!("{kind} was killed by signal {signal}")),
        Outcome::GaveUp => Some(format!(
            "{kind} was stopped: its output showed the turn cannot succeed"
        )),
        Outcome::MissingBinary { program } => Some(format!(
            "{binary} is not installed (`{program}` not found on PATH)"
        )),
        Outcome::SpawnError { message } => Some(message.clone()),
    }
}

/// The documented meaning of a CLI's exit code (agent-clis notes): the signals every CLI dies
/// of, then the CLI's own codes.
pub(crate) fn exit_meaning(kind: AdapterKind, code: i32) -> Option<&'static str> {
    match code {
        143 => Some("terminated by SIGTERM"),
        137 => Some("killed by SIGKILL"),
        _ => kind.adapter().exit_meaning(code),
    }
}

/// `u64` field of a JSON object, if it is a non-negative integer.
pub(crate) fn number(value: &serde_json::Value, key: &str) -> Option<u64> {
    value.get(key).and_then(serde_json::Value::as_u64)
}

/// Sum two optional counters (absent + absent stays absent).
pub(crate) fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        _ => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

/// The file path or command a tool input object names.
pub(crate) fn tool_target(input: &serde_json::Value) -> Option<String> {
    [
        "file_path",
        "path",
        "absolute_path",
        "command",
        "pattern",
        "url",
        "query",
    ]
    .into_iter()
    .find_map(|key| input.get(key).and_then(serde_json::Value::as_str))
    .map(|text| text.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_explained() {
        let ok = TurnSummary {
            terminal: Terminal::Success,
            ..TurnSummary::default()
        };
        assert_eq!(
            turn_failure(AdapterKind::ClaudeCode, &Outcome::Exited { code: 0 }, &ok),
            None
        );
        let missing = TurnSummary::default();
        assert_eq!(
            turn_failure(AdapterKind::Codex, &Outcome::Exited { code: 0 }, &missing).as_deref(),
            Some("codex exited 0 without a terminal event")
        );
        let failed = TurnSummary {
            terminal: Terminal::Failed {
                message: "auth".into(),
            },
            ..TurnSummary::default()
        };
        assert_eq!(
            turn_failure(
                AdapterKind::GeminiCli,
                &Outcome::Exited { code: 41 },
                &failed
            )
            .as_deref(),
            Some("gemini-cli exited 41 (authentication failed): auth")
        );
        assert_eq!(
            turn_failure(
                AdapterKind::ClaudeCode,
                &Outcome::MissingBinary {
                    program: "claude".into()
                },
                &missing
            )
            .as_deref(),
            Some("claude is not installed (`claude` not found on PATH)")
        );
        let command = TurnSummary {
            terminal: Terminal::NotApplicable,
            ..TurnSummary::default()
        };
        assert_eq!(
            turn_failure(AdapterKind::Command, &Outcome::Exited { code: 0 }, &command),
            None
        );
    }

    #[test]
    fn summaries_are_short() {
        let call = ToolCall {
            tool: "Bash".into(),
            target: Some("x".repeat(500)),
        };
        assert_eq!(call.summary().chars().count(), 200);
        assert_eq!(
            ToolCall {
                tool: "Read".into(),
                target: None
            }
            .summary(),
            "Read"
        );
    }
}
