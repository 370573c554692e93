//! Inside a `.j2` template: the context variables the engine renders it with
//! (`template_variables`), completed and explained for the role the template belongs to (its
//! `sees:` decides which kinds `outputs.by_kind` holds and whether `spec`, `build`, `qa` and
//! `verdict` are there at all — the same `RoleView` the runtime renders with).

use std::path::Path;

use crumb_core::pipeline::kinds::Slot;
use crumb_core::pipeline::template_variables::{RoleView, sample};
use serde_json::Value;

use super::position::word_at;
use super::server::Server;
use super::uri::normalize;

/// The `sees:` of the role a template belongs to, and its pipeline's kinds with their slots.
type Owner = (Vec<String>, Vec<(String, Slot)>);

/// The context a template at `path` is rendered with: the sample of every variable, with the
/// kinds and roles of the pipeline (and role) that use it.
pub(crate) fn context(server: &Server, path: &Path) -> Value {
    let mut kinds: Vec<String> = Vec::new();
    let mut roles: Vec<String> = Vec::new();
    // The `sees:` of the role the template belongs to, and its pipeline's slots.
    let mut owner: Option<Owner> = None;
    for (pipeline, diagnosed) in &server.pipelines {
        let Some(table) = diagnosed
            .table
            .as_ref()
            .filter(|_| diagnosed.reads.contains(path))
        else {
            continue;
        };
        roles.extend(table.roles.iter().map(|r| r.id.clone()));
        let dir = pipeline.parent().unwrap_or(Path::new("/"));
        let own = table
            .roles
            .iter()
            .find(|r| normalize(&dir.join(&r.template)) == path);
        match own {
            Some(role) if !role.sees.is_empty() => {
                kinds.extend(role.sees.iter().cloned());
                owner.get_or_insert_with(|| (role.sees.clone(), table.kinds.clone()));
            }
            _ => kinds.extend(table.kinds.iter().map(|(k, _)| k.clone())),
        }
    }
    kinds.sort();
    kinds.dedup();
    roles.sort();
    roles.dedup();
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
    match &owner {
        Some((sees, slots)) => RoleView::new(sees, slots).sample(&kinds, &roles),
        None => sample(&kinds, &roles),
    }
}

/// Whether byte `offset` is inside a `{{ … }}` or `{% … %}` tag.
pub(crate) fn in_tag(text: &str, offset: usize) -> bool {
    let before = &text[..offset.min(text.len())];
    let open = before.rfind("{{").max(before.rfind("{%"));
    let close = before.rfind("}}").max(before.rfind("%}"));
    match (open, close) {
        (Some(open), Some(close)) => open > close,
        (Some(_), None) => true,
        _ => false,
    }
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// The dotted path being typed before `offset`: its parent (`outputs.by_kind`) and the part
/// after the last dot.
pub(crate) fn typed_path(text: &str, offset: usize) -> (Vec<String>, String) {
    let before = &text[..offset.min(text.len())];
    let start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_path_char(*c))
        .last()
        .map_or(before.len(), |(i, _)| i);
    let typed = &before[start..];
    let mut parts: Vec<String> = typed.split('.').map(str::to_owned).collect();
    let last = parts.pop().unwrap_or_default();
    (parts, last)
}

/// The sample value at a dotted path.
pub(crate) fn lookup<'a>(context: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(context, |value, key| match value {
        Value::Array(items) => items.first().and_then(|item| item.get(key)),
        _ => value.get(key),
    })
}

/// The hover text of the variable path under `offset`, up to the segment under it.
pub(crate) fn hover(context: &Value, text: &str, offset: usize) -> Option<String> {
    if !in_tag(text, offset) {
        return None;
    }
    let (word, range) = word_at(text, offset, is_path_char)?;
    let upto = word[..(offset - range.start).min(word.len())].len();
    let end = word[upto..].find('.').map_or(word.len(), |i| upto + i);
    let path: Vec<String> = word[..end].split('.').map(str::to_owned).collect();
    let value = lookup(context, &path)?;
    let shown = serde_json::to_string_pretty(value).unwrap_or_default();
    let shown: String = shown.lines().take(40).collect::<Vec<_>>().join("\n");
    Some(format!(
        "`{}`: what the engine renders this template with (a sample of its shape)\n```json\n{shown}\n```",
        path.join(".")
    ))
}
