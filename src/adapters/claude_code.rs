//! Claude Code: `claude -p --output-format stream-json --verbose`, the prompt on stdin.
//!
//! - The prompt goes through stdin, never argv (Linux caps one argument at 128 KiB), and stdin is
//!   closed after it, so `claude -p` never waits for more input.
//! - Unattended edits and shell: `--permission-mode acceptEdits` plus `--allowedTools=…` in the
//!   `=` form (a variadic flag would swallow what follows). `bypassPermissions` is avoided because
//!   it refuses to run as root, which is common in containers.
//! - `CLAUDECODE` and `CLAUDE_CODE_ENTRYPOINT` are removed from the child's environment: when
//!   crumb itself runs inside Claude Code, the CLI's nesting guard would otherwise refuse to start.
//! - Usage comes from the final `result` line, preferring `modelUsage` (it includes subagents);
//!   tool calls from every `tool_use` block of `assistant` lines.

use serde_json::Value;

use super::turn::{
    Invocation, StreamParser, Terminal, ToolCall, TurnRequest, TurnSummary, Usage, add, number,
    tool_target,
};
use crate::pipeline::preset::Effort;

/// Tools pre-approved for an unattended turn.
pub const ALLOWED_TOOLS: &str = "Bash,Read,Write,Edit,MultiEdit,Glob,Grep,LS,TodoWrite";

/// The `claude` invocation for `request`.
pub fn invocation(request: &TurnRequest) -> Invocation {
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
    if let Some(effort) = request.effort {
        let effort = match effort {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        };
        args.push(format!("--effort={effort}"));
    }
    Invocation {
        program: "claude".into(),
        args: args.into_iter().map(Into::into).collect(),
        env: Vec::new(),
        env_remove: vec!["CLAUDECODE".into(), "CLAUDE_CODE_ENTRYPOINT".into()],
        stdin: Some(request.prompt.clone().into_bytes()),
    }
}

/// Parser of `--output-format stream-json` lines.
#[derive(Debug, Default)]
pub struct Parser {
    summary: TurnSummary,
    init_model: Option<String>,
}

impl StreamParser for Parser {
    fn line(&mut self, line: &str) -> Vec<ToolCall> {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        if let Some(id) = event.get("session_id").and_then(Value::as_str) {
            self.summary.adapter_session_id = Some(id.to_owned());
        }
        match event.get("type").and_then(Value::as_str) {
            Some("system") if event.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.init_model = event
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Vec::new()
            }
            Some("assistant") => tool_uses(&event),
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
}

impl Parser {
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
            Terminal::Failed {
                message: result_error(event),
            }
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

fn result_error(event: &Value) -> String {
    let errors: Vec<&str> = event
        .get("errors")
        .and_then(Value::as_array)
        .map(|errors| errors.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !errors.is_empty() {
        return errors.join("; ").chars().take(500).collect();
    }
    let subtype = event
        .get("subtype")
        .and_then(Value::as_str)
        .unwrap_or("error");
    match event.get("api_error_status").and_then(Value::as_u64) {
        Some(status) => format!("{subtype} (API status {status})"),
        None => event.get("result").and_then(Value::as_str).map_or_else(
            || subtype.to_owned(),
            |text| format!("{subtype}: {}", text.chars().take(300).collect::<String>()),
        ),
    }
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
            effort: Some(Effort::High),
            command: Vec::new(),
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
                && args.contains(&"--effort=high".to_owned())
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
                message: "success (API status 529)".into()
            }
        );
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
