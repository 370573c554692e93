//! Rename a role or kind everywhere it is named: its declaration, routes (`spawn:`, `from:`,
//! `on:`), `produces:` and `sees:`, in the pipeline and every fragment it includes or extends.

use std::collections::HashMap;
use std::path::Path;

use lsp_types::{TextEdit, Uri, WorkspaceEdit};

use super::navigation::mentions_under;
use super::server::Server;
use super::uri::from_path;

/// Why a new name is refused, else the edit.
#[allow(
    clippy::mutable_key_type,
    reason = "lsp-types keys a WorkspaceEdit's changes by Uri"
)]
pub(crate) fn rename(
    server: &Server,
    path: &Path,
    text: &str,
    offset: usize,
    new_name: &str,
) -> Result<Option<WorkspaceEdit>, String> {
    let valid = !new_name.is_empty()
        && new_name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !valid {
        return Err(format!(
            "`{new_name}` is not a role or kind name (letters, digits, `-`, `_`, `.`)"
        ));
    }
    let found = mentions_under(server, path, text, offset);
    if found.is_empty() {
        return Ok(None);
    }
    let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
    for (file, range, _) in found {
        if let Some(uri) = from_path(&file) {
            changes
                .entry(uri)
                .or_default()
                .push(TextEdit::new(range, new_name.to_owned()));
        }
    }
    Ok(Some(WorkspaceEdit::new(changes)))
}
