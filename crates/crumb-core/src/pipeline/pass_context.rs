//! The shared state of pass 3 (meaning): the file being checked, where each pointer into the
//! model is in it, and the diagnostics found so far. Every check of that pass takes it, so it
//! lives apart from the compiler that creates it (no check needs to import `compile`).

use std::path::Path;

use crate::pipeline::codes::{self, Code};
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::located_yaml::SpanIndex;
use crate::pipeline::salvage::Salvage;
use crate::pipeline::units::{parse_duration_ms, parse_size_bytes};

/// Shared state of pass 3: where we are and what we found.
pub(crate) struct Ctx<'a> {
    pub file: &'a Path,
    pub index: &'a SpanIndex,
    pub diagnostics: Vec<Diagnostic>,
    /// Parts of the file cut after schema errors; pointers into the model are mapped back.
    pub(crate) salvage: Salvage,
}

impl Ctx<'_> {
    /// A diagnostic pointing at the value at `pointer` (into the model).
    pub(crate) fn at(&self, code: &Code, pointer: &str, message: impl Into<String>) -> Diagnostic {
        let pointer = self.salvage.original(pointer);
        Diagnostic::new(code, self.file, message).at(self.index.value_span(&pointer))
    }

    /// A diagnostic pointing at the key of `pointer` (e.g. a role's id).
    pub(crate) fn at_key(
        &self,
        code: &Code,
        pointer: &str,
        message: impl Into<String>,
    ) -> Diagnostic {
        let pointer = self.salvage.original(pointer);
        Diagnostic::new(code, self.file, message).at(self.index.key_span(&pointer))
    }

    pub(crate) fn emit(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    /// Milliseconds of a duration; reports malformed or zero values (and returns 0).
    pub(crate) fn duration(&mut self, pointer: &str, text: &str) -> u64 {
        match parse_duration_ms(text) {
            Ok(0) => {
                self.emit(
                    self.at(
                        &codes::BAD_DURATION,
                        pointer,
                        format!("duration `{text}` is zero"),
                    )
                    .label("zero"),
                );
                0
            }
            Ok(ms) => ms,
            Err(err) => {
                let d = self
                    .at(
                        &codes::BAD_DURATION,
                        pointer,
                        format!("bad duration `{text}`: {err}"),
                    )
                    .label("not a duration")
                    .hint("write a whole number and a unit, e.g. `1500ms`, `30s`, `20m`, `1h30m`");
                self.emit(d);
                0
            }
        }
    }

    /// Bytes of a size; reports malformed or zero values (and returns 0).
    pub(crate) fn size(&mut self, pointer: &str, text: &str) -> u64 {
        match parse_size_bytes(text) {
            Ok(0) => {
                self.emit(
                    self.at(&codes::BAD_SIZE, pointer, format!("size `{text}` is zero"))
                        .label("zero"),
                );
                0
            }
            Ok(bytes) => bytes,
            Err(err) => {
                let d = self
                    .at(
                        &codes::BAD_SIZE,
                        pointer,
                        format!("bad size `{text}`: {err}"),
                    )
                    .label("not a size")
                    .hint("write a whole number and a unit, e.g. `512KB`, `5MB`, `2MiB`");
                self.emit(d);
                0
            }
        }
    }
}
