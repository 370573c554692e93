//! The `command` adapter: any program, run without a shell, with the same `CRUMB_*` environment,
//! working directory (the session folder) and prompt (on stdin, and at `$CRUMB_PROMPT_PATH`) as
//! the vendor adapters.
//!
//! The argv may use `{prompt_file}`, `{session_dir}`, `{role}` and `{model}` (an unset model
//! becomes an empty string). Stdout is a log; a line that is a JSON object with a `usage` object
//! (`{"usage": {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
//! "reasoning_tokens", "cost_usd", "model"}}`, every field optional) reports usage, summed over
//! the turn. The exit code and the role's `produces` event decide success.

use serde_json::Value;

use super::adapter::Adapter;
use super::turn::{
    Invocation, InvocationError, StreamParser, Terminal, ToolCall, TurnRequest, TurnSummary, add,
    number,
};

/// The command adapter.
pub(crate) struct Command;

impl Adapter for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn invocation(&self, request: &TurnRequest) -> Result<Invocation, InvocationError> {
        invocation(request)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(Parser::default())
    }

    fn runs_argv(&self) -> bool {
        true
    }
}

/// The invocation for `request.command`.
fn invocation(request: &TurnRequest) -> Result<Invocation, InvocationError> {
    let Some((program, args)) = request.command.split_first() else {
        return Err(InvocationError::EmptyCommand);
    };
    if program.is_empty() {
        return Err(InvocationError::EmptyCommand);
    }
    let prompt_file = request.prompt_file.to_string_lossy();
    let session_dir = request.session_dir.to_string_lossy();
    let model = request.model.as_deref().unwrap_or_default();
    let expand = |arg: &String| {
        arg.replace("{prompt_file}", &prompt_file)
            .replace("{session_dir}", &session_dir)
            .replace("{role}", &request.role)
            .replace("{model}", model)
            .into()
    };
    Ok(Invocation {
        program: expand(program),
        args: args.iter().map(expand).collect(),
        env: Vec::new(),
        env_remove: Vec::new(),
        stdin: Some(request.prompt.clone().into_bytes()),
        notes: Vec::new(),
        files: Vec::new(),
    })
}

/// Reads `{"usage": {…}}` lines; everything else is free text.
#[derive(Debug)]
pub(crate) struct Parser {
    summary: TurnSummary,
}

impl Default for Parser {
    fn default() -> Self {
        Parser {
            summary: TurnSummary {
                terminal: Terminal::NotApplicable,
                ..TurnSummary::default()
            },
        }
    }
}

impl StreamParser for Parser {
    fn line(&mut self, line: &str) -> Vec<ToolCall> {
        if !line.trim_start().starts_with('{') {
            return Vec::new();
        }
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let record = match event.get("usage") {
            Some(inner) if event.get("type").is_none() && inner.is_object() => inner,
            _ => return Vec::new(),
        };
        let usage = &mut self.summary.usage;
        usage.tokens_in = add(usage.tokens_in, number(record, "input_tokens"));
        usage.tokens_out = add(usage.tokens_out, number(record, "output_tokens"));
        usage.cache_read = add(usage.cache_read, number(record, "cache_read_tokens"));
        usage.cache_write = add(usage.cache_write, number(record, "cache_write_tokens"));
        usage.thinking_tokens = add(usage.thinking_tokens, number(record, "reasoning_tokens"));
        if let Some(cost) = record
            .get("cost_usd")
            .and_then(Value::as_f64)
            .filter(|cost| cost.is_finite() && *cost >= 0.0)
        {
            usage.cost_usd = Some(usage.cost_usd.unwrap_or(0.0) + cost);
        }
        if let Some(model) = record.get("model").and_then(Value::as_str) {
            usage.model = Some(model.chars().take(128).collect());
        }
        Vec::new()
    }

    fn summary(&self) -> TurnSummary {
        self.summary.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_expanded() {
        let request = TurnRequest {
            prompt: "hello".into(),
            prompt_file: "/s/prompts/builder-1.md".into(),
            session_dir: "/s".into(),
            role: "builder".into(),
            model: None,
            effort: None,
            command: vec![
                "my-agent".into(),
                "--role={role}".into(),
                "{prompt_file}".into(),
                "--model={model}".into(),
            ],
            endpoint: None,
        };
        let invocation = invocation(&request).unwrap();
        assert_eq!(invocation.program, "my-agent");
        assert_eq!(
            invocation.args,
            ["--role=builder", "/s/prompts/builder-1.md", "--model="]
        );
        assert_eq!(invocation.stdin.as_deref(), Some(&b"hello"[..]));
        let empty = TurnRequest {
            command: Vec::new(),
            endpoint: None,
            ..request
        };
        assert_eq!(
            super::invocation(&empty),
            Err(InvocationError::EmptyCommand)
        );
    }

    #[test]
    fn usage_lines_are_summed() {
        let mut parser = Parser::default();
        parser.line(
            r#"{"usage":{"input_tokens":10,"output_tokens":5,"cost_usd":0.5,"model":"local"}}"#,
        );
        parser.line("free text");
        parser.line(r#"{"usage":{"input_tokens":1,"cost_usd":-3}}"#);
        parser.line(
            r#"{"usage":{"input_tokens":100,"output_tokens":50,"cache_read_tokens":7,"cache_write_tokens":2,"reasoning_tokens":9,"model":"mock@v1"}}"#,
        );
        parser.line(r#"{"type":"other","usage":{"input_tokens":1000}}"#);
        let summary = parser.summary();
        assert_eq!(summary.terminal, Terminal::NotApplicable);
        assert_eq!(summary.usage.tokens_in, Some(111));
        assert_eq!(summary.usage.tokens_out, Some(55));
        assert_eq!(summary.usage.cache_read, Some(7));
        assert_eq!(summary.usage.cache_write, Some(2));
        assert_eq!(summary.usage.thinking_tokens, Some(9));
        assert_eq!(summary.usage.cost_usd, Some(0.5));
        assert_eq!(summary.usage.model.as_deref(), Some("mock@v1"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_usage_shaped_lines(body in "[\\[\\]{}\":,a-z0-9. -]{0,120}") {
            let mut parser = Parser::default();
            parser.line(&format!(r#"{{"usage":{{"input_tokens":{body},"cost_usd":{body}}}}}"#));
            parser.line(&format!(r#"{{"usage":{body}}}"#));
            let _ = parser.summary();
        }
    }
}
