//! Adapters: how each agent CLI (and the built-in mock) is run and how its structured output is read.

pub mod adapter_kind;
pub mod claude_code;
pub mod codex;
pub mod command;
pub mod failure;
pub mod gemini_cli;
pub mod mock;
pub mod turn;

pub use adapter_kind::{AdapterKind, UnknownAdapter};
pub use failure::{Failure, FailureClass, Problem, diagnose};
pub use turn::{
    Endpoint, Invocation, InvocationError, StreamParser, Terminal, ToolCall, TurnRequest,
    TurnSummary, Usage, turn_failure,
};

/// How `kind` runs `request` as a process (every adapter, the mock included, is one).
pub fn invocation(kind: AdapterKind, request: &TurnRequest) -> Result<Invocation, InvocationError> {
    match kind {
        AdapterKind::ClaudeCode => Ok(claude_code::invocation(request)),
        AdapterKind::Codex => Ok(codex::invocation(request)),
        AdapterKind::GeminiCli => Ok(gemini_cli::invocation(request)),
        AdapterKind::Command => command::invocation(request),
        AdapterKind::Mock => mock::invocation(request),
    }
}

/// A fresh parser for `kind`'s stdout.
pub fn parser(kind: AdapterKind) -> Box<dyn StreamParser> {
    match kind {
        AdapterKind::ClaudeCode => Box::new(claude_code::Parser::default()),
        AdapterKind::Codex => Box::new(codex::Parser::default()),
        AdapterKind::GeminiCli => Box::new(gemini_cli::Parser::default()),
        AdapterKind::Command | AdapterKind::Mock => Box::new(command::Parser::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::{AdapterKind, parser};

    proptest::proptest! {
        /// No stream parser panics on any line of text (each parser's own tests add lines shaped
        /// like its CLI's JSON).
        #[test]
        fn no_parser_panics_on_any_line(line in "\\PC{0,300}") {
            for kind in AdapterKind::ALL {
                let mut parser = parser(kind);
                parser.line(&line);
                let _ = parser.summary();
            }
        }
    }
}
