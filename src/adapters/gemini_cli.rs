//! Gemini CLI: `gemini -p <kick-off> --output-format stream-json`, the rendered prompt as the
//! system prompt through `GEMINI_SYSTEM_MD=<prompts/<role>-<n>.md>`.
//!
//! - There is no system-prompt flag; `GEMINI_SYSTEM_MD` names a file that replaces the system
//!   prompt. The prompt file is already written by the dispatcher, so nothing large crosses argv.
//! - stdin is `/dev/null`: with a pipe, Gemini waits only 500 ms for the first chunk and would
//!   prepend whatever arrives to the `-p` text.
//! - `--approval-mode yolo` (headless turns every "ask" into "deny", and `auto_edit` excludes the
//!   shell, which `crumb event` needs) and `--skip-trust` (an untrusted folder exits 55).
//! - `result.status` decides: exit 0 can still carry `status: "error"`, and an authentication
//!   failure exits 41 without any `result` line (its hint is only on stderr, which the failure
//!   classifier reads). On an API error gemini exits with the HTTP status mod 256 (400 → 144).
//! - `GEMINI_SYSTEM_MD` *replaces* Gemini's built-in system prompt, and Gemini expands `${…}`
//!   placeholders inside it. Both are wanted: the role's template is the whole instruction set
//!   (as `--system-prompt` is for Claude), and crumb's templates contain no `${`.
//! - Gemini CLI has no effort setting: an effort in the binding is ignored, with a note.
//! - `init.model` may be an alias (`auto`, `pro`, `flash`, `flash-lite`), never recorded as the
//!   model: the real ones are the keys of `result.stats.models`.

use serde_json::Value;

use super::adapter::{Adapter, Login, LoginCheck, VarSource, credential_set};
use super::diagnosis::{FailureClass, Problem, RetryNotices, class_of_text};
use super::turn::{
    Invocation, InvocationError, StreamParser, Terminal, ToolCall, TurnRequest, TurnSummary, Usage,
    number, tool_target,
};
use crate::process::LineFlow;

/// The `-p` text: the real instructions are in the system prompt.
pub(crate) const KICKOFF: &str = "Begin your turn now. Follow the system instructions exactly, write your results back with `crumb event`, and stop when your turn is complete.";

/// The gemini-cli adapter.
pub(crate) struct GeminiCli;

impl Adapter for GeminiCli {
    fn name(&self) -> &'static str {
        "gemini-cli"
    }

    fn binary(&self) -> Option<&'static str> {
        Some("gemini")
    }

    fn default_provider(&self) -> &'static str {
        "google"
    }

    fn invocation(&self, request: &TurnRequest) -> Result<Invocation, InvocationError> {
        Ok(invocation(request))
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(Parser::default())
    }

    fn exit_meaning(&self, code: i32) -> Option<&'static str> {
        match code {
            41 => Some("authentication failed"),
            42 => Some("input error"),
            44 => Some("sandbox error"),
            52 => Some("configuration error"),
            53 => Some("turn limit reached"),
            54 => Some("fatal tool error"),
            55 => Some("untrusted workspace"),
            130 => Some("cancelled"),
            _ => None,
        }
    }

    /// Gemini exits with an HTTP status mod 256 on API errors (401 → 145, 429 → 173), so those
    /// are read back too.
    fn exit_class(&self, code: i32) -> Option<FailureClass> {
        match code {
            41 | 145 | 147 => Some(FailureClass::Auth),
            173 => Some(FailureClass::Quota),
            157 => Some(FailureClass::InputTooLarge),
            144 | 244 | 247 | 249 => Some(FailureClass::Model),
            _ => None,
        }
    }

    fn auth_hint(&self) -> Option<&'static str> {
        Some(
            "set GEMINI_API_KEY (or run `gemini` once and choose a login); `crumb doctor` checks it",
        )
    }

    fn install_hint(&self) -> Option<&'static str> {
        Some("npm install -g @google/gemini-cli")
    }

    fn login_hint(&self) -> Option<&'static str> {
        Some(
            "set GEMINI_API_KEY (with GOOGLE_GEMINI_BASE_URL for a local server), or run `gemini` once and choose a login",
        )
    }

    fn login_check(&self, env: &dyn VarSource) -> LoginCheck {
        credential_set(
            env,
            &[
                "GEMINI_API_KEY",
                "GOOGLE_GENAI_USE_VERTEXAI",
                "GOOGLE_GENAI_USE_GCA",
            ],
        )
        .unwrap_or_else(|| {
            LoginCheck::Known(
                Login::Unknown,
                "no GEMINI_API_KEY; gemini has no status command, so a cached Google login cannot be checked without a request".to_owned(),
            )
        })
    }

    /// `GEMINI_CLI` is set by Gemini's shell tool.
    fn ambient_markers(&self) -> &'static [&'static str] {
        &["GEMINI_CLI", "GEMINI_SESSION_ID", "GEMINI_CLI_SESSION"]
    }
}

/// The model a binding without one runs: gemini-cli's own default Pro model. Left to itself the
/// CLI picks `auto`, whose router asks the server for a JSON routing decision and retries five
/// times when it gets text, as a local model API answers.
pub(crate) const DEFAULT_MODEL: &str = "gemini-2.5-pro";

/// The `gemini` invocation for `request`.
fn invocation(request: &TurnRequest) -> Invocation {
    let mut args: Vec<std::ffi::OsString> = vec![
        "-p".into(),
        KICKOFF.into(),
        "--output-format".into(),
        "stream-json".into(),
        "--approval-mode".into(),
        "yolo".into(),
        "--skip-trust".into(),
    ];
    let mut notes: Vec<String> = Vec::new();
    let model = request.model.as_deref().unwrap_or_else(|| {
        notes.push(format!(
            "the binding names no model: gemini runs `{DEFAULT_MODEL}` (without one its `auto` router retries a local server for ~100 s a turn); set `model:` in the binding to choose another, `auto` included"
        ));
        DEFAULT_MODEL
    });
    args.push("--model".into());
    args.push(model.into());
    notes.extend(request.effort.map(|effort| {
        format!(
            "gemini-cli has no effort setting: effort `{}` is ignored",
            effort.as_str()
        )
    }));
    let mut env = vec![(
        "GEMINI_SYSTEM_MD".into(),
        request.prompt_file.clone().into_os_string(),
    )];
    let mut files = Vec::new();
    if let Some(endpoint) = &request.endpoint {
        // With only a base URL set gemini picks its "gateway" auth, which headless runs refuse.
        // A home of its own for the turn selects the API-key auth (system settings would do it
        // too, but gemini skips them under a world-writable folder such as /tmp), and keeps the
        // user's cached Google login out of a turn meant for another server.
        let home = request.prompt_file.with_file_name("gemini-home");
        files.push((
            home.join(".gemini/settings.json"),
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#.to_owned(),
        ));
        env.push(("GEMINI_CLI_HOME".into(), home.into_os_string()));
        env.push((
            "GOOGLE_GEMINI_BASE_URL".into(),
            endpoint.base_url.clone().into(),
        ));
        env.push(("GEMINI_API_KEY".into(), endpoint.api_key.clone().into()));
    }
    Invocation {
        program: "gemini".into(),
        args,
        env,
        env_remove: Vec::new(),
        stdin: None,
        notes,
        files,
    }
}

/// Gemini CLI's model aliases: names of a choice, not of a model.
pub(crate) const MODEL_ALIASES: [&str; 4] = ["auto", "pro", "flash", "flash-lite"];

/// Parser of `--output-format stream-json` lines.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    summary: TurnSummary,
    init_model: Option<String>,
    retries: RetryNotices,
}

impl StreamParser for Parser {
    fn line(&mut self, line: &str) -> Vec<ToolCall> {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return Vec::new(); // older versions print notices on stdout
        };
        match event.get("type").and_then(Value::as_str) {
            Some("init") => {
                self.summary.adapter_session_id = event
                    .get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                // Aliases are not models; the real ones are the keys of result.stats.models.
                self.init_model = event
                    .get("model")
                    .and_then(Value::as_str)
                    .filter(|model| !MODEL_ALIASES.contains(model) && !model.starts_with("auto-"))
                    .map(str::to_owned);
                Vec::new()
            }
            Some("tool_use") => vec![ToolCall {
                tool: event
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_owned(),
                target: event.get("parameters").and_then(tool_target),
            }],
            Some("result") => {
                self.result(&event);
                Vec::new()
            }
            Some("error") if event.get("severity").and_then(Value::as_str) == Some("error") => {
                if let Some(message) = event.get("message").and_then(Value::as_str) {
                    self.summary.problem = Some(Problem::new(None, message));
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn summary(&self) -> TurnSummary {
        let mut summary = self.summary.clone();
        if summary.usage.model.is_none() {
            summary.usage.model.clone_from(&self.init_model);
        }
        summary
    }

    /// Gemini reports its API retries only on stderr ("Attempt 2 failed. Retrying with
    /// backoff... Error: …", then a stack trace): chatter, and a network that stays down or a
    /// rejected key ends the turn.
    fn stderr_line(&mut self, line: &str) -> LineFlow {
        let trimmed = line.trim_start();
        if trimmed.starts_with("at ") {
            return LineFlow::Chatter;
        }
        if !(trimmed.starts_with("Attempt ") && trimmed.contains("failed")) {
            return LineFlow::Progress;
        }
        let words = trimmed
            .split_once("Error: ")
            .map_or(trimmed, |(_, error)| error);
        let class = class_of_text(trimmed);
        self.summary.problem = Some(Problem::new(class, words));
        self.retries.notice(class)
    }
}

/// Reasoning tokens, which the stream-json `result` does not name: its `total_tokens` counts them
/// beside `input_tokens` and `output_tokens`, so they are what the total holds beyond those two.
/// Absent when the stats do not carry all three or the total is smaller than their sum.
fn reasoning(stats: &Value) -> Option<u64> {
    let total = number(stats, "total_tokens")?;
    let counted = number(stats, "input_tokens")?.checked_add(number(stats, "output_tokens")?)?;
    total.checked_sub(counted)
}

impl Parser {
    fn result(&mut self, event: &Value) {
        self.summary.terminal = if event.get("status").and_then(Value::as_str) == Some("success") {
            Terminal::Success
        } else {
            let message: String = event
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("result status is not success")
                .chars()
                .take(super::diagnosis::MAX_WORDS)
                .collect();
            self.summary.problem = Some(Problem::new(None, &message));
            Terminal::Failed { message }
        };
        if let Some(stats) = event.get("stats") {
            let cached = number(stats, "cached");
            let uncached = number(stats, "input").or_else(|| {
                number(stats, "input_tokens").map(|all| all.saturating_sub(cached.unwrap_or(0)))
            });
            self.summary.usage = Usage {
                tokens_in: uncached,
                tokens_out: number(stats, "output_tokens"),
                thinking_tokens: reasoning(stats),
                cache_read: cached,
                cache_write: None,
                cost_usd: None,
                model: stats
                    .get("models")
                    .and_then(Value::as_object)
                    .and_then(|models| {
                        models.iter().max_by_key(|(_, per_model)| {
                            number(per_model, "output_tokens").unwrap_or(0)
                        })
                    })
                    .map(|(name, _)| name.clone()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_prompt_goes_through_the_environment() {
        let request = TurnRequest {
            prompt: "x".repeat(200_000),
            prompt_file: "/s/prompts/verifier-2.md".into(),
            session_dir: "/s".into(),
            role: "verifier".into(),
            model: Some("pro".into()),
            effort: None,
            command: Vec::new(),
            endpoint: None,
        };
        let invocation = invocation(&request);
        assert_eq!(
            invocation.env,
            [("GEMINI_SYSTEM_MD".into(), "/s/prompts/verifier-2.md".into())]
        );
        assert_eq!(invocation.stdin, None);
        assert_eq!(invocation.args[0], "-p");
        assert!(invocation.args.iter().all(|arg| arg.len() < 500));
        assert!(invocation.args.contains(&"--skip-trust".into()));
    }

    #[test]
    fn parses_tools_usage_and_status() {
        let mut parser = Parser::default();
        let lines = [
            "MCP issues detected. Run /mcp list for status.",
            r#"{"type":"init","timestamp":"2026-08-21T10:00:00.000Z","session_id":"3b0c","model":"pro"}"#,
            r#"{"type":"message","timestamp":"…","role":"assistant","content":"Thinking...","delta":true}"#,
            r#"{"type":"tool_use","timestamp":"…","tool_name":"write_file","tool_id":"tool-1","parameters":{"file_path":"artifacts/game/index.html","content":"…"}}"#,
            r#"{"type":"tool_result","timestamp":"…","tool_id":"tool-1","status":"success"}"#,
            r#"{"type":"result","timestamp":"…","status":"success","stats":{"total_tokens":1830,"input_tokens":1700,"output_tokens":130,"cached":900,"input":800,"duration_ms":5120,"tool_calls":1,"models":{"gemini-2.5-pro":{"total_tokens":1830,"input_tokens":1700,"output_tokens":130,"cached":900,"input":800}}}}"#,
        ];
        let calls: Vec<ToolCall> = lines.iter().flat_map(|line| parser.line(line)).collect();
        assert_eq!(
            calls,
            [ToolCall {
                tool: "write_file".into(),
                target: Some("artifacts/game/index.html".into())
            }]
        );
        let summary = parser.summary();
        assert_eq!(summary.terminal, Terminal::Success);
        assert_eq!(summary.adapter_session_id.as_deref(), Some("3b0c"));
        assert_eq!(
            summary.usage,
            Usage {
                tokens_in: Some(800),
                tokens_out: Some(130),
                cache_read: Some(900),
                thinking_tokens: Some(0),
                model: Some("gemini-2.5-pro".into()),
                ..Usage::default()
            }
        );
    }

    #[test]
    fn reasoning_is_what_the_total_holds_beyond_input_and_output() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"result","status":"success","stats":{"total_tokens":1902,"input_tokens":1700,"output_tokens":130,"cached":900,"input":800}}"#);
        assert_eq!(parser.summary().usage.thinking_tokens, Some(72));
        let mut short = Parser::default();
        short.line(r#"{"type":"result","status":"success","stats":{"total_tokens":10,"input_tokens":1700,"output_tokens":130}}"#);
        assert_eq!(short.summary().usage.thinking_tokens, None);
        let mut partial = Parser::default();
        partial.line(r#"{"type":"result","status":"success","stats":{"input_tokens":1700,"output_tokens":130}}"#);
        assert_eq!(partial.summary().usage.thinking_tokens, None);
    }

    #[test]
    fn a_binding_without_a_model_runs_the_default_and_says_so() {
        let request = TurnRequest {
            prompt: String::new(),
            prompt_file: "/s/p.md".into(),
            session_dir: "/s".into(),
            role: "r".into(),
            model: None,
            effort: None,
            command: Vec::new(),
            endpoint: None,
        };
        let invocation = invocation(&request);
        let model = invocation
            .args
            .iter()
            .position(|arg| arg == "--model")
            .unwrap();
        assert_eq!(invocation.args[model + 1], DEFAULT_MODEL);
        assert_eq!(invocation.notes.len(), 1);
        assert!(
            invocation.notes[0].contains(DEFAULT_MODEL),
            "{:?}",
            invocation.notes
        );
        let chosen = invocation_for_model("auto");
        let model = chosen.args.iter().position(|arg| arg == "--model").unwrap();
        assert_eq!(chosen.args[model + 1], "auto");
        assert!(chosen.notes.is_empty(), "{:?}", chosen.notes);
    }

    fn invocation_for_model(model: &str) -> Invocation {
        invocation(&TurnRequest {
            prompt: String::new(),
            prompt_file: "/s/p.md".into(),
            session_dir: "/s".into(),
            role: "r".into(),
            model: Some(model.into()),
            effort: None,
            command: Vec::new(),
            endpoint: None,
        })
    }

    #[test]
    fn aliases_are_not_models_and_effort_is_noted() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"init","session_id":"s","model":"flash"}"#);
        assert_eq!(parser.summary().usage.model, None);
        let mut named = Parser::default();
        named.line(r#"{"type":"init","session_id":"s","model":"gemini-2.5-flash"}"#);
        assert_eq!(
            named.summary().usage.model.as_deref(),
            Some("gemini-2.5-flash")
        );
        let request = TurnRequest {
            prompt: String::new(),
            prompt_file: "/s/p.md".into(),
            session_dir: "/s".into(),
            role: "r".into(),
            model: Some("flash".into()),
            effort: Some(crate::pipeline::preset::Effort::High),
            command: Vec::new(),
            endpoint: None,
        };
        assert_eq!(
            invocation(&request).notes,
            ["gemini-cli has no effort setting: effort `high` is ignored"]
        );
    }

    #[test]
    fn stderr_retries_are_chatter_until_the_network_stays_down() {
        let mut parser = Parser::default();
        let attempt = "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request";
        assert_eq!(parser.stderr_line(attempt), LineFlow::Chatter);
        assert_eq!(
            parser.stderr_line("    at async retryWithBackoff (file:///x.js:1:2)"),
            LineFlow::Chatter
        );
        assert_eq!(
            parser.stderr_line("Ripgrep is not available."),
            LineFlow::Progress
        );
        assert_eq!(parser.stderr_line(attempt), LineFlow::GiveUp);
        let problem = parser.summary().problem.unwrap();
        assert_eq!(
            problem.words,
            "exception TypeError: fetch failed sending request"
        );
        assert_eq!(
            problem.class,
            Some(crate::adapters::problem::FailureClass::Network)
        );
    }

    #[test]
    fn error_status_fails_even_with_exit_0() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"result","status":"error","error":{"type":"INVALID_STREAM","message":"empty stream"}}"#);
        assert_eq!(
            parser.summary().terminal,
            Terminal::Failed {
                message: "empty stream".into()
            }
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_json_shaped_lines(kind in "(init|tool_use|result)", body in "[\\[\\]{}\":,a-z0-9 ]{0,120}") {
            let mut parser = Parser::default();
            parser.line(&format!(r#"{{"type":"{kind}","parameters":{body},"stats":{body},"error":{body}}}"#));
            let _ = parser.summary();
        }
    }
}
