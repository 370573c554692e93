//! The built-in deterministic `mock` adapter.

pub mod agent;
pub mod game;
pub mod scenario;

pub use scenario::Scenario;

use super::turn::{Invocation, InvocationError, TurnRequest};

/// The mock runs as `crumb mock-agent`, a child process like any agent CLI: the same
/// environment, the prompt on stdin, and a `{"usage": {…}}` line read by the `command` parser.
pub fn invocation(request: &TurnRequest) -> Result<Invocation, InvocationError> {
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
