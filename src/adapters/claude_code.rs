//! Claude Code: `claude -p --output-format stream-json --verbose`, the prompt on stdin.
//!
//! - The prompt goes through stdin, never argv (Linux caps one argument at 128 KiB), and stdin is
//!   closed after it, so `claude -p` never waits for more input.
//! - Unattended edits and shell: `--permission-mode acceptEdits` plus `--allowedTools=…` in the
//!   `=` form (a variadic flag would swallow what follows). `bypassPermissions` is avoided because
//!   it refuses to run as root, which is common in containers.
//! - `CLAUDECODE` and `CLAUDE_CODE_ENTRYPOINT` are removed from the child's environment: when
//!   crumb itself runs inside Claude Code, the CLI's nesting guard would otherwise refuse to start.
//! - Usage comes from the final `result` line, preferring `modelUsage` (it includes subagents
//!   and thinking tokens); tool calls from every `tool_use` block of `assistant` lines.
//! - Failures: `system/api_retry` lines are retry chatter (they do not hold off the idle
//!   timeout); one whose cause is `authentication_failed` or `billing_error` ends the turn at
//!   once, since the CLI would otherwise retry a rejected key for minutes. `assistant.error` and
//!   the result's text are kept as the CLI's own words.

use serde_json::Value;

use super::adapter::{Adapter, LoginCheck, VarSource, credential_set};
use super::diagnosis::{FailureClass, Problem, RetryNotices, class_of_text};
use super::turn::{
    Invocation, InvocationError, StreamParser, Terminal, ToolCall, TurnRequest, TurnSummary, Usage,
    add, number, tool_target,
};
use crate::pipeline::preset::Effort;
use crate::process::LineFlow;

/// Tools pre-approved for an unattended turn (Claude Code 2.1.3xx: `MultiEdit`, `LS` and
/// `TodoWrite` are gone, and unknown names are ignored silently).
pub(crate) const ALLOWED_TOOLS: &str = "Bash,Read,Write,Edit,Glob,Grep";

/// Claude Code's nesting guard (see the module docs).
const NESTING_GUARDS: &[&str] = &["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"];

/// The claude-code adapter.
pub(crate) struct ClaudeCode;

impl Adapter for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn binary(&self) -> Option<&'static str> {
        Some("claude")
    }

    fn default_provider(&self) -> &'static str {
        "anthropic"
    }

    fn invocation(&self, request: &TurnRequest) -> Result<Invocation, InvocationError> {
        Ok(invocation(request))
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(Parser::default())
    }

    fn auth_hint(&self) -> Option<&'static str> {
        Some("log in with `claude auth login` (or set ANTHROPIC_API_KEY); `crumb doctor` checks it")
    }

    fn install_hint(&self) -> Option<&'static str> {
        Some("npm install -g @anthropic-ai/claude-code")
    }

    fn login_hint(&self) -> Option<&'static str> {
        Some(
            "run `claude auth login`, or set ANTHROPIC_API_KEY (with ANTHROPIC_BASE_URL for a local model)",
        )
    }

    fn login_check(&self, env: &dyn VarSource) -> LoginCheck {
        credential_set(
            env,
            &[
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CODE_USE_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX",
            ],
        )
        .unwrap_or(LoginCheck::StatusCommand(&["auth", "status"]))
    }

    fn nesting_guards(&self) -> &'static [&'static str] {
        NESTING_GUARDS
    }

    fn ambient_markers(&self) -> &'static [&'static str] {
        &[
            "CLAUDECODE",
            "CLAUDE_CODE_SESSION_ID",
            "CLAUDE_CODE_ENTRYPOINT",
        ]
    }
}

/// The `claude` invocation for `request`.
fn invocation(request: &TurnRequest) -> Invocation {
    let mut args: Vec<String> = vec![
        "-p".into(),
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
        "--permission-mode".into(),
        "acceptEdits".into(),
        format!("--allowedTools={ALLOWED_TOOLS}"),
    ];
    if let Some(model) = &request.model {
        args.push(format!("--model={model}"));
    }
    let mut notes = Vec::new();
    if let Some(effort) = request.effort {
        let level = match effort {
            Effort::Minimal => {
                notes.push("claude-code has no `minimal` effort: running at `low`".to_owned());
                "low"
            }
            other => other.as_str(),
        };
        args.push(format!("--effort={level}"));
    }
    let mut env = Vec::new();
    let mut env_remove: Vec<std::ffi::OsString> = NESTING_GUARDS.iter().map(Into::into).collect();
    if let Some(endpoint) = &request.endpoint {
        // An Anthropic-compatible server; a token or OAuth login would outrank the key.
        env.push((
            "ANTHROPIC_BASE_URL".into(),
            endpoint.base_url.clone().into(),
        ));
        env.push(("ANTHROPIC_API_KEY".into(), endpoint.api_key.clone().into()));
        env_remove.extend([
            "ANTHROPIC_AUTH_TOKEN".into(),
            "CLAUDE_CODE_OAUTH_TOKEN".into(),
        ]);
    }
    Invocation {
        program: "claude".into(),
        args: args.into_iter().map(Into::into).collect(),
        env,
        env_remove,
        stdin: Some(request.prompt.clone().into_bytes()),
        notes,
        files: Vec::new(),
    }
}

/// Parser of `--output-format stream-json` lines.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    summary: TurnSummary,
    init_model: Option<String>,
    flow: LineFlow,
    retries: RetryNotices,
}

impl StreamParser for Parser {
    fn line(&mut self, line: &str) -> Vec<ToolCall> {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        if let Some(id) = event.get("session_id").and_then(Value::as_str) {
            self.summary.adapter_session_id = Some(id.to_owned());
        }
        self.flow = LineFlow::Progress;
        match event.get("type").and_then(Value::as_str) {
            Some("system") if event.get("subtype").and_then(Value::as_str) == Some("api_retry") => {
                self.api_retry(&event);
                Vec::new()
            }
            Some("system") if event.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.init_model = event
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Vec::new()
            }
            Some("assistant") => {
                self.assistant_error(&event);
                tool_uses(&event)
            }
            Some("result") => {
                self.result(&event);
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

    fn flow(&self) -> LineFlow {
        self.flow
    }
}

/// The class of one of Claude's error codes (`assistant.error`, `api_retry.error`).
fn error_class(code: &str) -> Option<FailureClass> {
    match code {
        "authentication_failed" | "oauth_org_not_allowed" => Some(FailureClass::Auth),
        "billing_error" | "rate_limit" => Some(FailureClass::Quota),
        "invalid_request" | "server_error" | "overloaded" | "max_output_tokens" => {
            Some(FailureClass::Model)
        }
        _ => None,
    }
}

impl Parser {
    /// A retry notice: chatter, unless its cause cannot go away by retrying.
    fn api_retry(&mut self, event: &Value) {
        let code = event
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        let status = event.get("error_status").and_then(Value::as_u64);
        // No HTTP status at all: the request never got an answer (connection refused, DNS).
        let class = error_class(code).or(match status {
            Some(401 | 403) => Some(FailureClass::Auth),
            Some(429) => Some(FailureClass::Quota),
            Some(413) => Some(FailureClass::InputTooLarge),
            Some(_) => Some(FailureClass::Model),
            None => Some(FailureClass::Network),
        });
        let words = match status {
            Some(status) => format!("{code} (API status {status})"),
            None => format!("{code} (no HTTP status: the model API did not answer)"),
        };
        self.summary.problem = Some(Problem::new(class, &words));
        self.flow = if code == "billing_error" {
            LineFlow::GiveUp
        } else {
            self.retries.notice(class)
        };
    }

    /// `assistant.error`: the CLI's code, with the message text as its words.
    fn assistant_error(&mut self, event: &Value) {
        let Some(code) = event.get("error").and_then(Value::as_str) else {
            return;
        };
        let text: String = event
            .pointer("/message/content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let words = if text.trim().is_empty() { code } else { &text };
        let class = class_of_text(words).or_else(|| error_class(code));
        self.summary.problem = Some(Problem::new(class, words));
    }

    fn result(&mut self, event: &Value) {
        let failed = event
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || event
                .get("subtype")
                .and_then(Value::as_str)
                .is_some_and(|subtype| subtype != "success");
        self.summary.terminal = if failed {
            let words = result_error(event);
            let class = class_of_text(&words).or(
                match event.get("api_error_status").and_then(Value::as_u64) {
                    Some(401 | 403) => Some(FailureClass::Auth),
                    Some(429) => Some(FailureClass::Quota),
                    Some(413) => Some(FailureClass::InputTooLarge),
                    _ => self.summary.problem.as_ref().and_then(|p| p.class),
                },
            );
            self.summary.problem = Some(Problem::new(class, &words));
            Terminal::Failed { message: words }
        } else {
            Terminal::Success
        };
        self.summary.usage = result_usage(event);
    }
}

/// Every `tool_use` block of an `assistant` line (not only the first).
fn tool_uses(event: &Value) -> Vec<ToolCall> {
    let Some(blocks) = event.pointer("/message/content").and_then(Value::as_array) else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|block| ToolCall {
            tool: block
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("tool")
                .to_owned(),
            target: block.get("input").and_then(tool_target),
        })
        .collect()
}

fn result_usage(event: &Value) -> Usage {
    let mut usage = Usage {
        cost_usd: event.get("total_cost_usd").and_then(Value::as_f64),
        ..Usage::default()
    };
    if let Some(models) = event
        .get("modelUsage")
        .and_then(Value::as_object)
        .filter(|models| !models.is_empty())
    {
        for per_model in models.values() {
            usage.tokens_in = add(usage.tokens_in, number(per_model, "inputTokens"));
            usage.tokens_out = add(usage.tokens_out, number(per_model, "outputTokens"));
            usage.cache_read = add(usage.cache_read, number(per_model, "cacheReadInputTokens"));
            usage.cache_write = add(
                usage.cache_write,
                number(per_model, "cacheCreationInputTokens"),
            );
            usage.thinking_tokens = add(usage.thinking_tokens, number(per_model, "thinkingTokens"));
        }
        // The main model is the one with the most output.
        usage.model = models
            .iter()
            .max_by_key(|(_, per_model)| number(per_model, "outputTokens").unwrap_or(0))
            .map(|(name, _)| name.clone());
    } else if let Some(main) = event.get("usage") {
        usage.tokens_in = number(main, "input_tokens");
        usage.tokens_out = number(main, "output_tokens");
        usage.cache_read = number(main, "cache_read_input_tokens");
        usage.cache_write = number(main, "cache_creation_input_tokens");
    }
    usage
}

/// The CLI's own words for a failed result: its `errors`, else its text (with the API status
/// when it gave one), else the subtype. Never a `success:` prefix: an API failure is reported
/// with `subtype: "success"` and `is_error: true`.
fn result_error(event: &Value) -> String {
    let errors: Vec<&str> = event
        .get("errors")
        .and_then(Value::as_array)
        .map(|errors| errors.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let text = if errors.is_empty() {
        event
            .get("result")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    } else {
        Some(errors.join("; "))
    };
    let status = event.get("api_error_status").and_then(Value::as_u64);
    let words = match (text, status) {
        (Some(text), Some(status)) => format!("{text} (API status {status})"),
        (Some(text), None) => text,
        (None, Some(status)) => format!("API status {status}"),
        (None, None) => event
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_owned(),
    };
    words.chars().take(super::diagnosis::MAX_WORDS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> TurnRequest {
        TurnRequest {
            prompt: "P".repeat(300_000),
            prompt_file: "/s/prompts/builder-1.md".into(),
            session_dir: "/s".into(),
            role: "builder".into(),
            model: Some("sonnet".into()),
            effort: Some(Effort::Max),
            command: Vec::new(),
            endpoint: None,
        }
    }

    #[test]
    fn argv_keeps_the_prompt_on_stdin() {
        let invocation = invocation(&request());
        let args: Vec<String> = invocation
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args[..4],
            ["-p", "--output-format", "stream-json", "--verbose"]
        );
        assert!(
            args.contains(&"--model=sonnet".to_owned())
                && args.contains(&"--effort=max".to_owned())
        );
        assert!(args.iter().all(|arg| arg.len() < 200), "no prompt in argv");
        assert_eq!(invocation.stdin.unwrap().len(), 300_000);
        assert!(invocation.env_remove.contains(&"CLAUDECODE".into()));
    }

    #[test]
    fn parses_tools_usage_and_result() {
        let mut parser = Parser::default();
        let lines = [
            r#"{"type":"system","subtype":"init","session_id":"9f1c","model":"claude-sonnet-4-6","tools":["Bash"]}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"thinking","thinking":"…"},{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"artifacts/game/index.html"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"crumb event"}}],"usage":{"input_tokens":5,"output_tokens":40}},"session_id":"9f1c"}"#,
            "not json at all",
            r#"{"type":"rate_limit_event","whatever":1}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"9f1c","total_cost_usd":0.042,"usage":{"input_tokens":12,"output_tokens":310,"cache_read_input_tokens":20480,"cache_creation_input_tokens":1500},"modelUsage":{"claude-sonnet-4-6":{"inputTokens":12,"outputTokens":310,"cacheReadInputTokens":20480,"cacheCreationInputTokens":1500,"costUSD":0.04},"claude-haiku-4-5":{"inputTokens":3,"outputTokens":7,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.002}}}"#,
        ];
        let calls: Vec<ToolCall> = lines.iter().flat_map(|line| parser.line(line)).collect();
        assert_eq!(
            calls,
            [
                ToolCall {
                    tool: "Write".into(),
                    target: Some("artifacts/game/index.html".into())
                },
                ToolCall {
                    tool: "Bash".into(),
                    target: Some("crumb event".into())
                },
            ]
        );
        let summary = parser.summary();
        assert_eq!(summary.terminal, Terminal::Success);
        assert_eq!(summary.adapter_session_id.as_deref(), Some("9f1c"));
        assert_eq!(
            summary.usage,
            Usage {
                tokens_in: Some(15),
                tokens_out: Some(317),
                thinking_tokens: None,
                cache_read: Some(20480),
                cache_write: Some(1500),
                cost_usd: Some(0.042),
                model: Some("claude-sonnet-4-6".into()),
            }
        );
        let mut thinking = Parser::default();
        thinking.line(r#"{"type":"result","subtype":"success","is_error":false,"modelUsage":{"m":{"inputTokens":1,"outputTokens":2,"thinkingTokens":40}}}"#);
        assert_eq!(thinking.summary().usage.thinking_tokens, Some(40));
    }

    #[test]
    fn error_results_fail_the_turn() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["max turns"],"usage":{"input_tokens":1,"output_tokens":2}}"#);
        assert_eq!(
            parser.summary().terminal,
            Terminal::Failed {
                message: "max turns".into()
            }
        );
        assert_eq!(parser.summary().usage.tokens_out, Some(2));
        let mut api = Parser::default();
        api.line(r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":529}"#);
        assert_eq!(
            api.summary().terminal,
            Terminal::Failed {
                message: "API status 529".into()
            }
        );
    }

    #[test]
    fn auth_failures_are_the_cli_s_words_and_end_the_turn() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":600,"error_status":401,"error":"authentication_failed"}"#);
        assert_eq!(parser.flow(), LineFlow::GiveUp);
        parser.line(r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Invalid API key · Fix external API key"}]},"error":"authentication_failed"}"#);
        parser.line(r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Fix external API key"}"#);
        let problem = parser.summary().problem.unwrap();
        assert_eq!(problem.class, Some(FailureClass::Auth));
        assert_eq!(
            problem.words,
            "Invalid API key · Fix external API key (API status 401)"
        );
        let mut logged_out = Parser::default();
        logged_out.line(r#"{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}"#);
        assert_eq!(
            logged_out.summary().terminal,
            Terminal::Failed {
                message: "Not logged in · Please run /login".into()
            }
        );
        assert_eq!(
            logged_out.summary().problem.unwrap().class,
            Some(FailureClass::Auth)
        );
    }

    #[test]
    fn rate_limit_retries_are_chatter_until_the_cap() {
        let mut parser = Parser::default();
        let line = r#"{"type":"system","subtype":"api_retry","attempt":1,"error_status":429,"error":"rate_limit"}"#;
        for _ in 1..crate::adapters::problem::MAX_RETRY_NOTICES {
            parser.line(line);
            assert_eq!(parser.flow(), LineFlow::Chatter);
        }
        parser.line(line);
        assert_eq!(parser.flow(), LineFlow::GiveUp);
        parser.line(r#"{"type":"assistant","message":{"content":[]}}"#);
        assert_eq!(parser.flow(), LineFlow::Progress);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_json_shaped_lines(kind in "(assistant|result|system|user)", body in "[\\[\\]{}\":,a-z0-9 ]{0,120}") {
            let mut parser = Parser::default();
            parser.line(&format!(r#"{{"type":"{kind}","message":{body},"usage":{body},"modelUsage":{body}}}"#));
            let _ = parser.summary();
        }
    }
}
