//! Codex: `codex exec --json … -`, the prompt on stdin.
//!
//! - `-` makes exec read the whole prompt from stdin, which is then closed (a positional prompt
//!   with an open stdin would block waiting for more).
//! - `--skip-git-repo-check` because the session directory is not a git repository;
//!   `--sandbox workspace-write` so the agent can edit its session; `--cd` pins the workspace.
//! - Effort has no flag: `-c model_reasoning_effort=<low|medium|high>`.
//! - The outcome is decided on `turn.completed` / `turn.failed` only: a top-level `error` line
//!   is often a transient "Reconnecting…" notice.
//! - `turn.completed.usage` counts cached input inside `input_tokens`; we report the uncached
//!   part as `tokens_in` and the cached part as `cache_read`.

use std::collections::HashSet;

use serde_json::Value;

use super::turn::{
    Invocation, StreamParser, Terminal, ToolCall, TurnRequest, TurnSummary, Usage, number,
};
use crate::pipeline::preset::Effort;

/// The `codex` invocation for `request`.
pub fn invocation(request: &TurnRequest) -> Invocation {
    let mut args: Vec<std::ffi::OsString> = vec![
        "exec".into(),
        "--json".into(),
        "--skip-git-repo-check".into(),
        "--sandbox".into(),
        "workspace-write".into(),
        "--color".into(),
        "never".into(),
        "--cd".into(),
        request.session_dir.clone().into_os_string(),
    ];
    if let Some(model) = &request.model {
        args.push("--model".into());
        args.push(model.into());
    }
    if let Some(effort) = request.effort {
        let effort = match effort {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        };
        args.push("-c".into());
        args.push(format!("model_reasoning_effort={effort}").into());
    }
    args.push("-".into());
    Invocation {
        program: "codex".into(),
        args,
        env: Vec::new(),
        env_remove: Vec::new(),
        stdin: Some(request.prompt.clone().into_bytes()),
    }
}

/// Parser of `codex exec --json` lines.
#[derive(Debug, Default)]
pub struct Parser {
    summary: TurnSummary,
    seen_items: HashSet<String>,
}

impl StreamParser for Parser {
    fn line(&mut self, line: &str) -> Vec<ToolCall> {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        match event.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                self.summary.adapter_session_id = event
                    .get("thread_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Vec::new()
            }
            Some("turn.completed") => {
                self.summary.terminal = Terminal::Success;
                if let Some(usage) = event.get("usage") {
                    self.summary.usage = usage_of(usage);
                }
                Vec::new()
            }
            Some("turn.failed") => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("turn failed")
                    .chars()
                    .take(500)
                    .collect();
                self.summary.terminal = Terminal::Failed { message };
                Vec::new()
            }
            Some("item.started" | "item.updated" | "item.completed") => {
                self.item(event.get("item"))
            }
            _ => Vec::new(),
        }
    }

    fn summary(&self) -> TurnSummary {
        self.summary.clone()
    }
}

impl Parser {
    /// A tool call the first time its item id is seen.
    fn item(&mut self, item: Option<&Value>) -> Vec<ToolCall> {
        let Some(item) = item else {
            return Vec::new();
        };
        // Old builds used `item_type`; current ones use `type`.
        let kind = item
            .get("type")
            .or_else(|| item.get("item_type"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let call = match kind {
            "command_execution" => ToolCall {
                tool: kind.to_owned(),
                target: text(item, "command"),
            },
            "file_change" => ToolCall {
                tool: kind.to_owned(),
                target: item
                    .get("changes")
                    .and_then(Value::as_array)
                    .map(|changes| {
                        changes
                            .iter()
                            .filter_map(|c| c.get("path").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .filter(|paths| !paths.is_empty()),
            },
            "mcp_tool_call" => ToolCall {
                tool: format!(
                    "{}/{}",
                    text(item, "server").unwrap_or_default(),
                    text(item, "tool").unwrap_or_default()
                ),
                target: None,
            },
            "web_search" => ToolCall {
                tool: kind.to_owned(),
                target: text(item, "query"),
            },
            _ => return Vec::new(),
        };
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !id.is_empty() && !self.seen_items.insert(id) {
            return Vec::new();
        }
        vec![call]
    }
}

fn text(item: &Value, key: &str) -> Option<String> {
    item.get(key)
        .and_then(Value::as_str)
        .map(|text| text.chars().take(200).collect())
}

fn usage_of(usage: &Value) -> Usage {
    let input = number(usage, "input_tokens");
    let cached = number(usage, "cached_input_tokens");
    Usage {
        tokens_in: input.map(|input| input.saturating_sub(cached.unwrap_or(0))),
        tokens_out: number(usage, "output_tokens"),
        thinking_tokens: number(usage, "reasoning_output_tokens"),
        cache_read: cached,
        cache_write: number(usage, "cache_write_input_tokens"),
        cost_usd: None,
        model: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_reads_the_prompt_from_stdin() {
        let request = TurnRequest {
            prompt: "build it".into(),
            prompt_file: "/s/prompts/builder-1.md".into(),
            session_dir: "/s".into(),
            role: "builder".into(),
            model: Some("gpt-5.5-codex".into()),
            effort: Some(Effort::Low),
            command: Vec::new(),
        };
        let invocation = invocation(&request);
        let args: Vec<String> = invocation
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--sandbox",
                "workspace-write",
                "--color",
                "never",
                "--cd",
                "/s",
                "--model",
                "gpt-5.5-codex",
                "-c",
                "model_reasoning_effort=low",
                "-"
            ]
        );
        assert_eq!(invocation.stdin.as_deref(), Some(&b"build it"[..]));
    }

    #[test]
    fn parses_items_usage_and_terminal_events() {
        let mut parser = Parser::default();
        let lines = [
            r#"{"type":"thread.started","thread_id":"0199a213"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"artifacts/game/index.html","kind":"add"}],"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122,"reasoning_output_tokens":64}}"#,
        ];
        let calls: Vec<ToolCall> = lines.iter().flat_map(|line| parser.line(line)).collect();
        assert_eq!(
            calls,
            [
                ToolCall {
                    tool: "command_execution".into(),
                    target: Some("bash -lc ls".into())
                },
                ToolCall {
                    tool: "file_change".into(),
                    target: Some("artifacts/game/index.html".into())
                },
            ]
        );
        let summary = parser.summary();
        assert_eq!(summary.terminal, Terminal::Success);
        assert_eq!(summary.adapter_session_id.as_deref(), Some("0199a213"));
        assert_eq!(summary.usage.tokens_in, Some(315));
        assert_eq!(summary.usage.cache_read, Some(24448));
        assert_eq!(summary.usage.tokens_out, Some(122));
        assert_eq!(summary.usage.thinking_tokens, Some(64));
    }

    #[test]
    fn a_transient_error_is_not_terminal_but_turn_failed_is() {
        let mut parser = Parser::default();
        parser.line(r#"{"type":"error","message":"Reconnecting... 1/5"}"#);
        assert_eq!(parser.summary().terminal, Terminal::Missing);
        parser.line(r#"{"type":"turn.failed","error":{"message":"model response stream ended unexpectedly"}}"#);
        assert_eq!(
            parser.summary().terminal,
            Terminal::Failed {
                message: "model response stream ended unexpectedly".into()
            }
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_json_shaped_lines(kind in "(item.started|item.completed|turn.completed|turn.failed)", body in "[\\[\\]{}\":,a-z0-9 ]{0,120}") {
            let mut parser = Parser::default();
            parser.line(&format!(r#"{{"type":"{kind}","item":{body},"usage":{body},"error":{body}}}"#));
        }
    }
}
