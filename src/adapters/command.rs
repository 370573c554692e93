//! The `command` adapter: any argv, the prompt on stdin.
//!
//! The argv template may use `{prompt_file}`, `{session_dir}`, `{role}` and `{model}` (an unset
//! model becomes an empty string). Output is free text; a stdout line that is a JSON object with
//! `"type": "crumb.usage"` (or, as the mock agent prints it, `{"usage": {…}}`) reports usage in
//! crumb's own terms (`tokens_in`, `tokens_out`, `cache_read`, `cache_write`, `cost_usd`,
//! `model`), summed over the turn. The exit code alone decides success.

use serde_json::Value;

use super::turn::{
    Invocation, InvocationError, StreamParser, Terminal, ToolCall, TurnRequest, TurnSummary, add,
    number,
};

/// The invocation for `request.command`.
pub fn invocation(request: &TurnRequest) -> Result<Invocation, InvocationError> {
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
    })
}

/// Reads `crumb.usage` lines; everything else is free text.
#[derive(Debug)]
pub struct Parser {
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
        // `{"type": "crumb.usage", …}`, or the mock agent's `{"usage": {…}}` record.
        let record = if event.get("type").and_then(Value::as_str) == Some("crumb.usage") {
            &event
        } else {
            match event.get("usage") {
                Some(inner) if event.get("type").is_none() && inner.is_object() => inner,
                _ => return Vec::new(),
            }
        };
        let usage = &mut self.summary.usage;
        usage.tokens_in = add(usage.tokens_in, number(record, "tokens_in"));
        usage.tokens_out = add(usage.tokens_out, number(record, "tokens_out"));
        usage.cache_read = add(usage.cache_read, number(record, "cache_read"));
        usage.cache_write = add(usage.cache_write, number(record, "cache_write"));
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
        parser.line(r#"{"type":"crumb.usage","tokens_in":10,"tokens_out":5,"cost_usd":0.5,"model":"local"}"#);
        parser.line("free text");
        parser.line(r#"{"type":"crumb.usage","tokens_in":1,"cost_usd":-3}"#);
        parser.line(
            r#"{"usage":{"tokens_in":100,"tokens_out":50,"cache_read":7,"model":"mock@v1"}}"#,
        );
        parser.line(r#"{"type":"other","usage":{"tokens_in":1000}}"#);
        let summary = parser.summary();
        assert_eq!(summary.terminal, Terminal::NotApplicable);
        assert_eq!(summary.usage.tokens_in, Some(111));
        assert_eq!(summary.usage.tokens_out, Some(55));
        assert_eq!(summary.usage.cache_read, Some(7));
        assert_eq!(summary.usage.cost_usd, Some(0.5));
        assert_eq!(summary.usage.model.as_deref(), Some("mock@v1"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_usage_shaped_lines(body in "[\\[\\]{}\":,a-z0-9. -]{0,120}") {
            let mut parser = Parser::default();
            parser.line(&format!(r#"{{"type":"crumb.usage","tokens_in":{body},"cost_usd":{body}}}"#));
            parser.line(&format!(r#"{{"usage":{body}}}"#));
            let _ = parser.summary();
        }
    }
}
