//! Passes 1 and 2, shared by pipelines and presets: bytes → text → located YAML document →
//! schema-checked → typed model. Every problem becomes a diagnostic; nothing here panics on
//! hostile input.

use std::path::Path;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::pipeline::codes;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::located_yaml::{self, Document, Span};
use crate::pipeline::salvage::Salvage;
use crate::pipeline::schema;
use crate::pipeline::source::{ReadError, SourceFiles};

/// Largest file accepted. Pipelines and presets are a few KB; anything near this is a mistake
/// (or an attack), and refusing early keeps validation fast and memory bounded.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// Which schema a document is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Pipeline,
    Preset,
}

/// What passes 1 and 2 made of a file.
#[derive(Debug)]
pub struct Front<T> {
    pub document: Option<Document>,
    /// The typed model; after schema errors, of the parts that typed (see `salvage`).
    pub model: Option<T>,
    /// What was cut from the document so the rest could be typed.
    pub(crate) salvage: Salvage,
}

/// Read a pipeline or preset through `files`: a FIFO, a device or a file over
/// [`MAX_FILE_BYTES`] is refused before it can block or exhaust memory. `None` after reporting why.
pub fn read_file(files: &dyn SourceFiles, file: &Path) -> Result<Vec<u8>, Box<Diagnostic>> {
    files.read(file, MAX_FILE_BYTES as u64).map_err(|err| {
        Box::new(match err {
            ReadError::TooLarge { .. } => Diagnostic::new(
                &codes::FILE_TOO_LARGE,
                file,
                format!("file is larger than the limit of {MAX_FILE_BYTES} bytes"),
            )
            .hint("pipeline and preset files are small declarations; is this the right file?"),
            other => Diagnostic::new(
                &codes::FILE_UNREADABLE,
                file,
                format!("cannot read file: {other}"),
            ),
        })
    })
}

/// Check size and encoding. Returns the text, or `None` after reporting why not.
pub fn decode<'a>(bytes: &'a [u8], file: &Path, out: &mut Vec<Diagnostic>) -> Option<&'a str> {
    if bytes.len() > MAX_FILE_BYTES {
        out.push(
            Diagnostic::new(
                &codes::FILE_TOO_LARGE,
                file,
                format!(
                    "file is {} bytes; the limit is {MAX_FILE_BYTES} bytes",
                    bytes.len()
                ),
            )
            .hint("pipeline and preset files are small declarations; is this the right file?"),
        );
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text.strip_prefix('\u{feff}').unwrap_or(text)),
        Err(err) => {
            let valid = &bytes[..err.valid_up_to()];
            let text = String::from_utf8_lossy(valid);
            let line = text.matches('\n').count() + 1;
            let col = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            out.push(
                Diagnostic::new(
                    &codes::NOT_UTF8,
                    file,
                    format!("invalid UTF-8 at byte {}", err.valid_up_to()),
                )
                .at(Some(Span {
                    line: as_u32(line),
                    col: as_u32(col),
                    len: 1,
                    file: 0,
                }))
                .hint("save the file as UTF-8"),
            );
            None
        }
    }
}

/// Parse `text` and check it against the schema of `kind`; deserialize the model when clean.
pub fn parse<T: DeserializeOwned>(
    text: &str,
    file: &Path,
    kind: FileKind,
    out: &mut Vec<Diagnostic>,
) -> Front<T> {
    match load_document(text, file, out) {
        Some(document) => parse_document(document, file, kind, out),
        None => Front {
            document: None,
            model: None,
            salvage: Salvage::default(),
        },
    }
}

/// Pass 1 alone: the located document, or `None` after reporting why there is none.
pub(crate) fn load_document(
    text: &str,
    file: &Path,
    out: &mut Vec<Diagnostic>,
) -> Option<Document> {
    let document = match located_yaml::load(text) {
        Ok(document) => document,
        Err(err) => {
            report_syntax(text, file, &err, out);
            return None;
        }
    };
    if document.value.is_null() {
        out.push(
            Diagnostic::new(&codes::EMPTY_FILE, file, "the file has no YAML content").hint(
                "write a pipeline (`crumb schema pipeline` shows the format) or remove the file",
            ),
        );
        return None;
    }
    Some(document)
}

/// Pass 2 on a loaded (possibly assembled) document: duplicate keys, the schema, typing.
pub(crate) fn parse_document<T: DeserializeOwned>(
    document: Document,
    file: &Path,
    kind: FileKind,
    out: &mut Vec<Diagnostic>,
) -> Front<T> {
    let before = out.len();
    report_duplicates(&document, file, kind, out);
    let (schema, validator) = validator(kind);
    let before_schema = out.len();
    schema::check(validator, schema, &document, file, out);
    // Schema errors cut the parts they are in; the rest is typed and checked for meaning too.
    let salvaged = if out.len() > before_schema {
        salvage(validator, &document.value)
    } else {
        Some((document.value.clone(), Salvage::default()))
    };
    let Some((value, salvage)) = salvaged else {
        return Front {
            document: Some(document),
            model: None,
            salvage: Salvage::default(),
        };
    };
    let reported = out.len() > before;
    match serde_json::from_value::<T>(value) {
        Ok(model) => Front {
            document: Some(document),
            model: Some(model),
            salvage,
        },
        Err(err) => {
            // The schema is generated from the same types, so this is rare (e.g. a number too
            // large for its field); still a diagnostic (unless a cut part already explains
            // it), never a panic.
            if !reported {
                let overflow = overflowed_number(&document.value, "");
                let span = overflow
                    .as_deref()
                    .and_then(|pointer| document.index.value_span(pointer));
                let message = match &overflow {
                    Some(pointer) => format!(
                        "the number at {} is too large: {err}",
                        schema::display_pointer(pointer)
                    ),
                    None => format!("cannot read the file: {err}"),
                };
                out.push(
                    Diagnostic::new(&codes::WRONG_TYPE, file, message)
                        .at(span)
                        .maybe_hint(overflow.map(|_| "write a number in the field's range".into())),
                );
            }
            Front {
                document: Some(document),
                model: None,
                salvage,
            }
        }
    }
}

/// Every key written twice in one mapping of `document` (a role id twice is `duplicate-role`).
pub(crate) fn report_duplicates(
    document: &Document,
    file: &Path,
    kind: FileKind,
    out: &mut Vec<Diagnostic>,
) {
    for duplicate in &document.duplicates {
        let code = if kind == FileKind::Pipeline && duplicate.parent == "/roles" {
            &codes::DUPLICATE_ROLE
        } else {
            &codes::DUPLICATE_KEY
        };
        let what = if code == &codes::DUPLICATE_ROLE {
            "role"
        } else {
            "key"
        };
        let hint = duplicate
            .first
            .map(|s| format!("first defined at line {}", s.line));
        out.push(
            Diagnostic::new(
                code,
                file,
                format!(
                    "duplicate {what} `{}` in {}",
                    duplicate.key,
                    schema::display_pointer(&duplicate.parent)
                ),
            )
            .at(duplicate.again)
            .label("defined again here")
            .maybe_hint(hint),
        );
    }
}

/// The pointer of the first whole number too large for any integer type (YAML reads it as a
/// float, so the schema's `integer` accepts it and only typing fails): where to point the error.
fn overflowed_number(value: &Value, pointer: &str) -> Option<String> {
    match value {
        Value::Number(n) => n
            .as_f64()
            .filter(|f| n.as_i64().is_none() && n.as_u64().is_none() && f.fract() == 0.0)
            .map(|_| pointer.to_owned()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| overflowed_number(item, &format!("{pointer}/{i}"))),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            overflowed_number(
                item,
                &format!("{pointer}/{}", located_yaml::escape_segment(key)),
            )
        }),
        _ => None,
    }
}

/// The document with the items schema errors are in cut out, or `None` when nothing can be cut.
fn salvage(validator: &jsonschema::Validator, value: &Value) -> Option<(Value, Salvage)> {
    let errors = |value: &Value| -> Vec<(String, Vec<String>)> {
        validator
            .iter_errors(value)
            .map(|e| {
                let unexpected = match e.kind() {
                    ValidationErrorKind::AdditionalProperties { unexpected } => unexpected.clone(),
                    _ => Vec::new(),
                };
                (deepest(&e), unexpected)
            })
            .collect()
    };
    Salvage::cut_until_valid(value.clone(), errors)
}

/// Where a violation really is: `anyOf`/`oneOf` (an optional section, a check kind) report at
/// the section; the deepest place any branch complains about is the item to cut.
fn deepest(error: &jsonschema::ValidationError<'_>) -> String {
    let here = error.instance_path().as_str().to_string();
    let (ValidationErrorKind::AnyOf { context: branches }
    | ValidationErrorKind::OneOfNotValid { context: branches }) = error.kind()
    else {
        return here;
    };
    branches
        .iter()
        .flatten()
        .map(deepest)
        .chain(std::iter::once(here))
        .max_by_key(|p| p.matches('/').count())
        .unwrap_or_default()
}

pub(crate) fn report_syntax(
    text: &str,
    file: &Path,
    err: &located_yaml::LoadError,
    out: &mut Vec<Diagnostic>,
) {
    let tabs: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            line.chars()
                .take_while(|c| c.is_whitespace())
                .any(|c| c == '\t')
        })
        .map(|(i, _)| i + 1)
        .collect();
    // Blame tabs only when the parser tripped on a line that has one; a tab elsewhere (say in a
    // block scalar) is not this error's cause.
    let near_error = |line: &usize| {
        err.span
            .is_none_or(|s| usize::try_from(s.line).is_ok_and(|l| l == *line))
    };
    let tabs: Vec<usize> = if tabs.iter().any(near_error) {
        tabs
    } else {
        Vec::new()
    };
    if tabs.is_empty() {
        if text.trim().is_empty() {
            out.push(Diagnostic::new(
                &codes::EMPTY_FILE,
                file,
                "the file has no YAML content",
            ));
            return;
        }
        out.push(
            Diagnostic::new(
                &codes::YAML_SYNTAX,
                file,
                format!("invalid YAML: {}", err.message),
            )
            .at(err.span)
            .label("here"),
        );
        return;
    }
    for line in tabs.iter().take(5) {
        let text_line = text.lines().nth(line - 1).unwrap_or("");
        let col = text_line.chars().position(|c| c == '\t').unwrap_or(0) + 1;
        out.push(
            Diagnostic::new(&codes::TAB_INDENTATION, file, "tab used for indentation")
                .at(Some(Span {
                    line: as_u32(*line),
                    col: as_u32(col),
                    len: 1,
                    file: 0,
                }))
                .label("tab")
                .hint("YAML indentation must use spaces"),
        );
    }
}

fn as_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The schema and its compiled validator, built once per process.
fn validator(kind: FileKind) -> (&'static Value, &'static jsonschema::Validator) {
    static PIPELINE: OnceLock<(Value, jsonschema::Validator)> = OnceLock::new();
    static PRESET: OnceLock<(Value, jsonschema::Validator)> = OnceLock::new();
    let (cell, make): (_, fn() -> Value) = match kind {
        FileKind::Pipeline => (&PIPELINE, schema::pipeline_schema),
        FileKind::Preset => (&PRESET, schema::preset_schema),
    };
    let (schema, validator) = cell.get_or_init(|| {
        let schema = make();
        // The schema is generated by schemars at build time of this binary; it is always a
        // valid draft-07 schema, and a test compiles it.
        let validator = jsonschema::draft7::new(&schema).expect("generated schema compiles");
        (schema, validator)
    });
    (schema, validator)
}
