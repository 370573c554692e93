//! The dispatcher's tap on an agent CLI's stdout: feeds each line to the adapter's own stream
//! parser (usage, the CLI's end-of-turn event, tool calls) while the turn runs. Tool calls are
//! handed out as they are parsed, so they are recorded at the time the stream showed them (a
//! live view sees a tool call while it runs), at most [`MAX_TOOL_CALLS`] of them so a chatty
//! agent cannot flood the transcript.

use serde_json::{Map, json};

use crate::adapters::{AdapterKind, StreamParser, Terminal, ToolCall, TurnSummary};
use crate::process::LineFlow;
use crate::transcript::Visibility;
use crate::transcript::{Draft, Kind, Metadata};

/// Most `tool.call` events written for one turn; the rest are only counted.
pub(crate) const MAX_TOOL_CALLS: usize = 50;

/// Parser state of one turn.
pub(crate) struct StreamTap {
    kind: AdapterKind,
    parser: Box<dyn StreamParser>,
    calls: Vec<ToolCall>,
    /// How many of `calls` were already handed out as drafts.
    drafted: usize,
    omitted: u64,
}

impl StreamTap {
    pub(crate) fn new(kind: AdapterKind) -> Self {
        Self {
            kind,
            parser: crate::adapters::parser(kind),
            calls: Vec::new(),
            drafted: 0,
            omitted: 0,
        }
    }

    /// Feed one stdout line; returns how it counts for the idle timeout.
    pub(crate) fn line(&mut self, line: &str) -> LineFlow {
        for call in self.parser.line(line) {
            if self.calls.len() < MAX_TOOL_CALLS {
                self.calls.push(call);
            } else {
                self.omitted += 1;
            }
        }
        self.parser.flow()
    }

    /// Feed one stderr line; returns how it counts for the idle timeout.
    pub(crate) fn stderr_line(&mut self, line: &str) -> LineFlow {
        self.parser.stderr_line(line)
    }

    /// What the adapter's parser learned.
    pub(crate) fn summary(&self) -> TurnSummary {
        self.parser.summary()
    }

    /// Whether the CLI's end-of-turn event has arrived (successful or not): the turn's result is
    /// known, and what is left is the CLI shutting down.
    pub(crate) fn result_arrived(&self) -> bool {
        matches!(
            self.parser.summary().terminal,
            Terminal::Success | Terminal::Failed { .. }
        )
    }

    /// Tool calls seen beyond [`MAX_TOOL_CALLS`].
    pub(crate) fn omitted(&self) -> u64 {
        self.omitted
    }

    /// The kept tool calls not handed out yet, as private `tool.call` drafts from `role`, in
    /// stream order.
    pub(crate) fn new_tool_call_drafts(&mut self, role: &str) -> Vec<Draft> {
        let start = self.drafted;
        self.drafted = self.calls.len();
        self.calls[start..]
            .iter()
            .map(|call| {
                let mut data = Map::new();
                data.insert("tool_kind".into(), json!(call.tool));
                if let Some(target) = &call.target {
                    data.insert("target".into(), json!(target));
                }
                Draft::new(role.to_owned(), Kind::ToolCall)
                    .body(call.summary())
                    .data(data)
                    .metadata(Metadata {
                        visibility: Some(Visibility::Private),
                        deterministic: Some(true),
                        tool: Some(format!("{}-stream@v1", self.kind)),
                        ..Metadata::default()
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude_tool_line(i: usize) -> String {
        json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": format!("echo {i} {}", "x".repeat(1000))}}
        ]}})
        .to_string()
    }

    #[test]
    fn tool_calls_are_bounded_and_truncated() {
        let mut tap = StreamTap::new(AdapterKind::ClaudeCode);
        for i in 0..MAX_TOOL_CALLS + 7 {
            tap.line(&claude_tool_line(i));
        }
        tap.line("not json at all {");
        let drafts = tap.new_tool_call_drafts("builder");
        assert_eq!(drafts.len(), MAX_TOOL_CALLS);
        assert!(
            tap.new_tool_call_drafts("builder").is_empty(),
            "each call is handed out once"
        );
        assert_eq!(tap.omitted(), 7);
        let first = &drafts[0];
        assert_eq!(first.from, "builder");
        assert!(first.body.as_deref().unwrap().starts_with("Bash echo 0 "));
        assert!(first.body.as_deref().unwrap().chars().count() <= 200);
        let metadata = first.metadata.as_ref().unwrap();
        assert_eq!(metadata.tool.as_deref(), Some("claude-code-stream@v1"));
        assert_eq!(metadata.visibility, Some(Visibility::Private));
    }

    #[test]
    fn tool_calls_are_handed_out_as_they_are_parsed_and_the_result_is_noticed() {
        let mut tap = StreamTap::new(AdapterKind::ClaudeCode);
        tap.line(&claude_tool_line(0));
        assert_eq!(tap.new_tool_call_drafts("builder").len(), 1);
        assert!(!tap.result_arrived());
        tap.line(&claude_tool_line(1));
        let second = tap.new_tool_call_drafts("builder");
        assert_eq!(second.len(), 1);
        assert!(
            second[0]
                .body
                .as_deref()
                .unwrap()
                .starts_with("Bash echo 1 ")
        );
        tap.line(r#"{"type":"result","subtype":"success","is_error":false,"result":"done"}"#);
        assert!(tap.result_arrived());
    }
}
