//! The built-in deterministic `mock` adapter.

pub(crate) mod agent;
pub mod game;
pub(crate) mod scenario;

pub(crate) use scenario::Scenario;

use super::adapter::Adapter;
use super::command;
use super::turn::{Invocation, InvocationError, StreamParser, TurnRequest};

/// The mock adapter.
pub(crate) struct Mock;

impl Adapter for Mock {
    fn name(&self) -> &'static str {
        "mock"
    }

    fn invocation(&self, request: &TurnRequest) -> Result<Invocation, InvocationError> {
        invocation(request)
    }

    /// The mock reports usage as the `command` adapter's programs do.
    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(command::Parser::default())
    }
}

/// The mock runs as `crumb mock-agent`, a child process like any agent CLI: the same
/// environment, the prompt on stdin, and a `{"usage": {…}}` line read by the `command` parser.
fn invocation(request: &TurnRequest) -> Result<Invocation, InvocationError> {
    let exe = std::env::current_exe().map_err(|e| InvocationError::NoCrumb(e.to_string()))?;
    Ok(Invocation {
        program: exe.into_os_string(),
        args: vec!["mock-agent".into()],
        env: Vec::new(),
        env_remove: Vec::new(),
        stdin: Some(request.prompt.clone().into_bytes()),
        notes: Vec::new(),
        files: Vec::new(),
    })
}
