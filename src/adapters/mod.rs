//! Adapters: how each agent CLI (and the built-in mock) is run and how its structured output is
//! read. Each adapter is one module implementing `adapter::Adapter`: its invocation, stream
//! parser (usage, terminal event, tool calls), exit codes and auth hint for the failure
//! classifier, install and login checks for `crumb doctor`, and markers for ambient detection.
//! The rest of crumb holds an [`AdapterKind`] (the id bindings and events carry) and asks its
//! adapter; nothing outside this folder names one adapter.
//!
//! Adding an adapter:
//! 1. write `src/adapters/<name>.rs` with a unit struct implementing `adapter::Adapter`
//!    (`name`, `invocation` and `parser` are required; the rest default to "not an agent CLI":
//!    no binary, provider `none`, no login, no exit codes of its own);
//! 2. add `mod <name>;` here and one line `<Kind> => <name>::<Struct>,` to the list in
//!    [`registry`];
//! 3. add its contract tests: its parser's lines in the module's own tests; for an agent CLI, a
//!    fake of it in `tests/fixtures/fake-clis/` driven by `tests/runtime/fake_clis.rs`, and its
//!    cases against the real CLI in `tests/agents/`.

pub(crate) mod adapter;
pub(crate) mod adapter_kind;
pub(crate) mod claude_code;
pub(crate) mod codex;
pub(crate) mod command;
pub(crate) mod diagnosis;
pub(crate) mod gemini_cli;
pub mod mock;
pub(crate) mod prices;
pub(crate) mod problem;
pub(crate) mod registry;
pub(crate) mod turn;

pub(crate) use adapter::Login;
pub use adapter_kind::{AdapterKind, UnknownAdapter};
pub(crate) use diagnosis::{TurnFailure, diagnose};
pub use turn::{
    Endpoint, Invocation, InvocationError, StreamParser, Terminal, ToolCall, TurnRequest,
    TurnSummary, Usage, turn_failure,
};

/// How `kind` runs `request` as a process (every adapter, the mock included, is one).
pub fn invocation(kind: AdapterKind, request: &TurnRequest) -> Result<Invocation, InvocationError> {
    kind.adapter().invocation(request)
}

/// A fresh parser for `kind`'s stdout.
pub fn parser(kind: AdapterKind) -> Box<dyn StreamParser> {
    kind.adapter().parser()
}

#[cfg(test)]
mod tests {
    use super::AdapterKind;

    proptest::proptest! {
        /// No stream parser panics on any line of text (each parser's own tests add lines shaped
        /// like its CLI's JSON).
        #[test]
        fn no_parser_panics_on_any_line(line in "\\PC{0,300}") {
            for kind in AdapterKind::ALL {
                let mut parser = kind.adapter().parser();
                parser.line(&line);
                let _ = parser.stderr_line(&line);
                let _ = parser.summary();
            }
        }
    }
}
