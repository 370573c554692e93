//! What `crumb validate` reports on one file's bytes: a preset's checks or the pipeline's
//! compile. `crumb validate` reads the file from disk and `crumb lsp` passes an editor's buffer;
//! both go through [`read_and_compile`], so the editor shows exactly what the command prints.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::pipeline::compile::{CompileOptions, compile_bytes};
use crate::pipeline::diagnostic_render::FileReport;
use crate::pipeline::loader::{self, MAX_FILE_BYTES};
use crate::pipeline::located_yaml::load;
use crate::pipeline::preset_check::check_preset_bytes;
use crate::pipeline::source::SourceFiles;
use crate::pipeline::table::TransitionTable;

/// The report for `file`, read through `files` like everything it names (a file too large or
/// unreadable is the report's one diagnostic).
pub fn read_and_report(file: &Path, files: &Arc<dyn SourceFiles>) -> FileReport {
    read_and_compile(file, files).0
}

/// [`read_and_report`] with the table a pipeline compiled to (`None` for a preset or a pipeline
/// with errors), for callers that go on to explore or draw it.
pub fn read_and_compile(
    file: &Path,
    files: &Arc<dyn SourceFiles>,
) -> (FileReport, Option<TransitionTable>) {
    let bytes = match loader::read_file(files.as_ref(), file) {
        Ok(bytes) => bytes,
        Err(diagnostic) => {
            let report = FileReport {
                file: file.to_path_buf(),
                diagnostics: vec![*diagnostic],
                sources: Vec::new(),
            };
            return (report, None);
        }
    };
    if !is_preset(file, &bytes) {
        let compiled = compile_bytes(&bytes, file, &CompileOptions::default(), files);
        let report = FileReport {
            file: file.to_path_buf(),
            diagnostics: compiled.diagnostics,
            sources: compiled.sources,
        };
        return (report, compiled.table);
    }
    let (_, diagnostics) = check_preset_bytes(&bytes, file);
    let text = String::from_utf8(bytes).unwrap_or_default();
    let report = FileReport {
        file: file.to_path_buf(),
        diagnostics,
        sources: vec![(file.to_path_buf(), text)],
    };
    (report, None)
}

/// Presets are recognised by place (a `presets` folder), by name (`*.preset.yaml`), or by
/// content: a mapping with no `version` or `routes` whose bindings name an `adapter`.
pub fn is_preset(path: &Path, bytes: &[u8]) -> bool {
    let in_presets = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|name| name == "presets");
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".preset.yaml"));
    in_presets || named || looks_like_preset(bytes)
}

fn looks_like_preset(bytes: &[u8]) -> bool {
    if bytes.len() > MAX_FILE_BYTES {
        return false;
    }
    let Some(Value::Object(top)) = std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| load(text).ok())
        .map(|document| document.value)
    else {
        return false;
    };
    let binds = |v: &Value| v.get("adapter").is_some();
    let pipeline_keys = top.contains_key("version") || top.contains_key("routes");
    let default_binding = top.get("default").is_some_and(binds);
    let role_bindings = top
        .get("roles")
        .and_then(Value::as_object)
        .is_some_and(|roles| !roles.is_empty() && roles.values().all(binds));
    !pipeline_keys && (default_binding || role_bindings)
}
