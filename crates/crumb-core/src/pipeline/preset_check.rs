//! Checking a preset file: passes 1 and 2 against the preset schema, then the adapters it names.
//! Apart from the preset's types, which the schema is generated from.

use std::path::Path;

use crate::pipeline::codes::{self, KNOWN_ADAPTERS};
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::loader::{self, FileKind};
use crate::pipeline::located_yaml::escape_segment;
use crate::pipeline::preset::Preset;
use crate::pipeline::semantic::adapter_hint;

/// Validate a preset file's content: passes 1 and 2, then known adapters.
/// Returns the diagnostics and the preset when it is usable.
pub fn check_preset_bytes(bytes: &[u8], origin: &Path) -> (Option<Preset>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let Some(text) = loader::decode(bytes, origin, &mut out) else {
        return (None, out);
    };
    let parsed = loader::parse::<Preset>(text, origin, FileKind::Preset, &mut out);
    let (Some(document), Some(preset)) = (parsed.document, parsed.model) else {
        return (None, out);
    };
    let bindings = preset
        .default
        .iter()
        .map(|b| ("/default".to_string(), b))
        .chain(
            preset
                .roles
                .iter()
                .map(|(role, b)| (format!("/roles/{}", escape_segment(role)), b)),
        );
    for (pointer, binding) in bindings {
        if !binding.command.is_empty() && binding.adapter != "command" {
            out.push(
                Diagnostic::new(
                    &codes::INVALID_VALUE,
                    origin,
                    format!(
                        "`command` is only used by the command adapter, not `{}`",
                        binding.adapter
                    ),
                )
                .at(document.index.value_span(&format!("{pointer}/command")))
                .label("ignored by this adapter")
                .hint("set `adapter: command`, or remove `command`"),
            );
        }
        if !KNOWN_ADAPTERS.contains(&binding.adapter.as_str()) {
            out.push(
                Diagnostic::new(
                    &codes::UNKNOWN_ADAPTER,
                    origin,
                    format!("unknown adapter `{}`", binding.adapter),
                )
                .at(document.index.value_span(&format!("{pointer}/adapter")))
                .label("no such adapter")
                .hint(adapter_hint(&binding.adapter)),
            );
        }
    }
    let usable = !out.iter().any(Diagnostic::is_error);
    (usable.then_some(preset), out)
}
