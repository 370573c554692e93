//! The compiled graph in the editor: a code lens on a pipeline's first line runs the
//! `crumb.graph` command, which answers the table's Mermaid graph (what `crumb graph` prints).

use std::path::Path;

use lsp_types::{CodeLens, Command, Position, Range, Uri};
use serde_json::json;

use super::server::Server;

/// The command the lens runs.
pub(crate) const COMMAND: &str = "crumb.graph";

pub(crate) fn lenses(server: &Server, uri: &Uri, path: &Path) -> Vec<CodeLens> {
    let Some(table) = server.pipelines.get(path).and_then(|d| d.table.as_ref()) else {
        return Vec::new();
    };
    vec![CodeLens {
        range: Range::new(Position::new(0, 0), Position::new(0, 0)),
        command: Some(Command::new(
            format!(
                "crumb graph: {} roles, {} routes",
                table.roles.len(),
                table.routes.len()
            ),
            COMMAND.to_owned(),
            Some(vec![json!(uri.as_str())]),
        )),
        data: None,
    }]
}

/// The Mermaid graph of the pipeline at `path`, if it compiles.
pub(crate) fn graph(server: &Server, path: &Path) -> Option<String> {
    let table = server.pipelines.get(path)?.table.as_ref()?;
    Some(crumb_core::pipeline::graph::mermaid(table))
}
