//! `extends:` and `include:` — a pipeline built from several YAML files, assembled into one
//! located document before the schema sees it, so every later pass works on one value and every
//! span still names the file and line:col it was written at ([`Span::file`]).
//!
//! Merge rules:
//! - `extends: base.yaml` starts from the base pipeline. `roles`, `kinds` and `inputs` merge by
//!   name (the file's entry replaces the base's entry of that name whole); every other top-level
//!   key the file writes replaces the base's value whole (`routes` included).
//! - `include: [fragment.yaml, …]` adds a fragment's `roles`, `kinds` and `inputs` (a name
//!   defined twice is an error pointing at the second, naming the first) and appends its
//!   `routes` after the file's own, in include order. A fragment holds only those keys and
//!   `include`.
//!
//! Paths are relative to the file that names them and stay inside the project (the folder
//! holding the pipeline's folder), like templates. A role's `template` and `command` paths in
//! another file are rewritten relative to the compiled pipeline, so the runtime and freezing
//! resolve them as written. Cycles are errors that show the chain.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::pipeline::codes;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::lexical_path::normalize;
use crate::pipeline::loader::{self, FileKind};
use crate::pipeline::located_yaml::{Document, Span, SpanIndex, escape_segment};
use crate::pipeline::source::{Entry, SourceFiles, stays_inside};

pub(crate) const EXTENDS: &str = "extends";
pub(crate) const INCLUDE: &str = "include";
/// Sections merged by name.
const NAMED: [&str; 3] = ["roles", "kinds", "inputs"];
/// What a fragment may hold.
const FRAGMENT_KEYS: [&str; 5] = ["roles", "kinds", "inputs", "routes", INCLUDE];
/// Most files one pipeline may be assembled from.
const MAX_FILES: usize = 64;

/// Whether `document` names other files at all (the common case does not, and skips all this).
pub(crate) fn uses_other_files(document: &Document) -> bool {
    document
        .value
        .as_object()
        .is_some_and(|m| m.contains_key(EXTENDS) || m.contains_key(INCLUDE))
}

/// What assembling read besides the compiled file.
#[derive(Debug, Default)]
pub struct Assembled {
    /// Each other file as diagnostics show it, with its text (for snippets).
    pub sources: Vec<(PathBuf, String)>,
    /// Each other file's real path (what freezing copies).
    pub(crate) real_paths: Vec<PathBuf>,
}

/// Replace `document` by the pipeline it assembles to; problems go to `out`, attributed to the
/// file they are in.
pub fn assemble(
    document: &mut Document,
    origin: &Path,
    out: &mut Vec<Diagnostic>,
    files: &dyn SourceFiles,
) -> Assembled {
    let mut assembler = Assembler {
        source: files,
        origin: origin.to_path_buf(),
        main_dir: None,
        root: None,
        files: Vec::new(),
        assembled: Assembled::default(),
        out,
    };
    let main_real = files.canonicalize(origin);
    if let Some(real) = &main_real {
        let dir = real.parent().map(Path::to_path_buf);
        assembler.root = dir.as_deref().map(|d| {
            d.parent()
                .map_or_else(|| d.to_path_buf(), Path::to_path_buf)
        });
        assembler.main_dir = dir;
    }
    let shown_dir = origin.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut stack = main_real.into_iter().collect::<Vec<_>>();
    let mut chain = vec![origin.to_path_buf()];
    let taken = std::mem::take(document);
    *document = assembler.expand(taken, 0, &shown_dir, false, &mut stack, &mut chain);
    document.index.files = assembler.files;
    assembler.assembled
}

/// The pipeline at `path` as one value (its `extends`/`include` resolved) and the real paths of
/// the other files it is made of; `None` when it cannot be read or parsed at all (compiling it
/// says why).
pub fn assembled_file(path: &Path, files: &dyn SourceFiles) -> Option<(Value, Vec<PathBuf>)> {
    let bytes = loader::read_file(files, path).ok()?;
    let mut ignored = Vec::new();
    let text = loader::decode(&bytes, path, &mut ignored)?;
    let mut document = loader::load_document(text, path, &mut ignored)?;
    let assembled = if uses_other_files(&document) {
        assemble(&mut document, path, &mut ignored, files)
    } else {
        Assembled::default()
    };
    Some((document.value, assembled.real_paths))
}

struct Assembler<'a> {
    source: &'a dyn SourceFiles,
    origin: PathBuf,
    /// The compiled file's real folder, which rewritten paths are relative to.
    main_dir: Option<PathBuf>,
    /// The project folder no file may leave.
    root: Option<PathBuf>,
    /// Shown paths of the other files; file id `n` is `files[n - 1]`.
    files: Vec<PathBuf>,
    assembled: Assembled,
    out: &'a mut Vec<Diagnostic>,
}

impl Assembler<'_> {
    /// Resolve `document`'s own `extends`/`include` (file id `id`, shown in `shown_dir`).
    fn expand(
        &mut self,
        mut document: Document,
        id: u32,
        shown_dir: &Path,
        fragment: bool,
        stack: &mut Vec<PathBuf>,
        chain: &mut Vec<PathBuf>,
    ) -> Document {
        document.index.retag(id);
        let Value::Object(map) = &mut document.value else {
            return document;
        };
        if fragment {
            let extra: Vec<String> = map
                .keys()
                .filter(|k| !FRAGMENT_KEYS.contains(&k.as_str()))
                .cloned()
                .collect();
            for key in extra {
                let span = document
                    .index
                    .key_span(&format!("/{}", escape_segment(&key)));
                self.emit(
                    Diagnostic::new(
                        &codes::FRAGMENT_KEY,
                        &self.origin,
                        format!("an included fragment cannot set `{key}`"),
                    )
                    .at(span)
                    .label("not allowed in a fragment")
                    .hint("a fragment holds roles, kinds, inputs, routes and include; use `extends:` to start from a whole pipeline"),
                );
                map.remove(&key);
            }
        }
        let extends = map.remove(EXTENDS);
        let include = map.remove(INCLUDE);
        let mut result = document;
        if let Some(value) = extends {
            let names = self.names(&value, &result.index, &format!("/{EXTENDS}"));
            if names.len() > 1 {
                let span = result.index.value_span(&format!("/{EXTENDS}"));
                self.emit(
                    Diagnostic::new(
                        &codes::INCLUDE_FILE,
                        &self.origin,
                        "`extends` names one base pipeline",
                    )
                    .at(span)
                    .label("one file")
                    .hint("extend one pipeline and `include:` the fragments you need from others"),
                );
            }
            if let Some((name, span)) = names.into_iter().next()
                && let Some(base) = self.load(&name, span, shown_dir, false, stack, chain)
            {
                result = over(base, result);
            }
        }
        if let Some(value) = include {
            for (name, span) in self.names(&value, &result.index, &format!("/{INCLUDE}")) {
                if let Some(fragment) = self.load(&name, span, shown_dir, true, stack, chain) {
                    self.add(&mut result, fragment);
                }
            }
        }
        result
    }

    fn emit(&mut self, mut diagnostic: Diagnostic) {
        if let Some(path) = diagnostic.span.and_then(|s| self.path_of(s.file)) {
            diagnostic.file = path;
        }
        self.out.push(diagnostic);
    }

    fn path_of(&self, id: u32) -> Option<PathBuf> {
        let n = usize::try_from(id).ok()?.checked_sub(1)?;
        self.files.get(n).cloned()
    }

    /// The file names `value` holds (a string or a list of strings), each with its span.
    fn names(
        &mut self,
        value: &Value,
        index: &SpanIndex,
        pointer: &str,
    ) -> Vec<(String, Option<Span>)> {
        let items: Vec<(String, &Value)> = match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{pointer}/{i}"), v))
                .collect(),
            other => vec![(pointer.to_owned(), other)],
        };
        let mut names = Vec::new();
        for (at, item) in items {
            let span = index.value_span(&at);
            match item.as_str() {
                Some(name) if !name.trim().is_empty() => names.push((name.to_owned(), span)),
                _ => self.emit(
                    Diagnostic::new(
                        &codes::INCLUDE_FILE,
                        &self.origin,
                        format!("`{}` takes a file path or a list of them", &pointer[1..]),
                    )
                    .at(span)
                    .label("not a file path")
                    .hint("write e.g. `include: [roles/common.yaml]`, relative to this file"),
                ),
            }
        }
        names
    }

    /// Load, check and expand the file `name` names (relative to `shown_dir`'s real folder).
    fn load(
        &mut self,
        name: &str,
        span: Option<Span>,
        shown_dir: &Path,
        fragment: bool,
        stack: &mut Vec<PathBuf>,
        chain: &mut Vec<PathBuf>,
    ) -> Option<Document> {
        let problem = |this: &mut Self, message: String, label: &str, hint: &str| {
            this.emit(
                Diagnostic::new(&codes::INCLUDE_FILE, &this.origin, message)
                    .at(span)
                    .label(label.to_owned())
                    .hint(hint.to_owned()),
            );
            None
        };
        let (Some(root), Some(including_dir)) = (
            self.root.clone(),
            stack.last().and_then(|p| p.parent()).map(Path::to_path_buf),
        ) else {
            return problem(
                self,
                format!("cannot read `{name}`: this pipeline was not read from a file"),
                "no folder to resolve against",
                "compile the pipeline from its file",
            );
        };
        let real = normalize(&including_dir.join(name));
        let shown = normalize(&shown_dir.join(name));
        if Path::new(name).is_absolute() || !stays_inside(self.source, &root, &real) {
            return problem(
                self,
                format!("`{name}` is outside the project"),
                "leaves the project folder",
                "keep pipeline fragments inside the project, relative to the file naming them",
            );
        }
        if self.source.entry(&real) != Entry::File {
            return problem(
                self,
                format!("`{name}` not found"),
                &format!("no file at {}", shown.display()),
                "paths are relative to the file that names them",
            );
        }
        let real = self.source.canonicalize(&real).unwrap_or(real);
        if let Some(at) = stack.iter().position(|p| p == &real) {
            let mut names: Vec<String> = chain[at..]
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            names.push(shown.display().to_string());
            self.emit(
                Diagnostic::new(
                    &codes::INCLUDE_CYCLE,
                    &self.origin,
                    format!("include cycle: {}", names.join(" → ")),
                )
                .at(span)
                .label("closes the cycle")
                .hint("a file cannot include or extend itself, directly or through others"),
            );
            return None;
        }
        if self.files.len() >= MAX_FILES {
            return problem(
                self,
                format!("more than {MAX_FILES} files make up this pipeline"),
                "one too many",
                "a pipeline is a few files; is an include repeated?",
            );
        }
        let bytes = match loader::read_file(self.source, &real) {
            Ok(bytes) => bytes,
            Err(diagnostic) => {
                let mut diagnostic = *diagnostic;
                diagnostic.file.clone_from(&shown);
                self.out.push(diagnostic);
                return None;
            }
        };
        let text = loader::decode(&bytes, &shown, self.out)?.to_owned();
        let mut document = loader::load_document(&text, &shown, self.out)?;
        loader::report_duplicates(&document, &shown, FileKind::Pipeline, self.out);
        self.assembled.sources.push((shown.clone(), text));
        self.assembled.real_paths.push(real.clone());
        self.files.push(shown.clone());
        let id = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        if let Some(dir) = real.parent() {
            self.rewrite_paths(&mut document.value, dir);
        }
        stack.push(real);
        chain.push(shown.clone());
        let shown_child_dir = shown.parent().map(Path::to_path_buf).unwrap_or_default();
        let expanded = self.expand(document, id, &shown_child_dir, fragment, stack, chain);
        stack.pop();
        chain.pop();
        Some(expanded)
    }

    /// Roles' `template` and `command` paths of a file in `dir`, made relative to the compiled
    /// pipeline's folder.
    fn rewrite_paths(&self, value: &mut Value, dir: &Path) {
        let Some(main_dir) = &self.main_dir else {
            return;
        };
        let prefix = relative(main_dir, dir);
        if prefix.as_os_str().is_empty() {
            return;
        }
        let moved = |path: &str| normalize(&prefix.join(path)).to_string_lossy().into_owned();
        let Some(roles) = value.get_mut("roles").and_then(Value::as_object_mut) else {
            return;
        };
        for role in roles.values_mut() {
            if let Some(Value::String(template)) = role.get_mut("template")
                && !Path::new(template.as_str()).is_absolute()
            {
                *template = moved(template);
            }
            let argv = role
                .get_mut("adapter")
                .and_then(|a| a.get_mut("command"))
                .and_then(Value::as_array_mut);
            for arg in argv.into_iter().flatten() {
                if let Value::String(text) = arg
                    && crate::pipeline::argv::is_path(text)
                    && !Path::new(text.as_str()).is_absolute()
                {
                    *text = moved(text);
                }
            }
        }
    }

    /// Add a fragment's named entries (a name already there is an error) and its routes.
    fn add(&mut self, into: &mut Document, fragment: Document) {
        let Value::Object(from) = fragment.value else {
            return;
        };
        let Value::Object(to) = &mut into.value else {
            return;
        };
        for (key, value) in from {
            let section = format!("/{}", escape_segment(&key));
            if !to.contains_key(&key) {
                into.index.graft(&fragment.index, &section, &section);
                to.insert(key, value);
                continue;
            }
            match (to.get_mut(&key), value) {
                (Some(Value::Object(existing)), Value::Object(entries))
                    if NAMED.contains(&key.as_str()) =>
                {
                    for (name, entry) in entries {
                        let pointer = format!("{section}/{}", escape_segment(&name));
                        if existing.contains_key(&name) {
                            let first = into.index.key_span(&pointer);
                            let first_at = first.map(|s| {
                                let file =
                                    self.path_of(s.file).unwrap_or_else(|| self.origin.clone());
                                format!("{}:{}:{}", file.display(), s.line, s.col)
                            });
                            let code = if key == "roles" {
                                &codes::DUPLICATE_ROLE
                            } else {
                                &codes::DUPLICATE_KEY
                            };
                            self.emit(
                                Diagnostic::new(code, &self.origin, format!("`{name}` in {key} is defined twice"))
                                    .at(fragment.index.key_span(&pointer))
                                    .label("defined again here")
                                    .maybe_hint(first_at.map(|at| format!("first defined at {at}; rename one, or use `extends:` to replace it"))),
                            );
                            continue;
                        }
                        into.index.graft(&fragment.index, &pointer, &pointer);
                        existing.insert(name, entry);
                    }
                }
                (Some(Value::Array(existing)), Value::Array(items)) if key == "routes" => {
                    let offset = existing.len();
                    for (i, item) in items.into_iter().enumerate() {
                        into.index.graft(
                            &fragment.index,
                            &format!("{section}/{i}"),
                            &format!("{section}/{}", offset + i),
                        );
                        existing.push(item);
                    }
                }
                // A shape the schema will reject at the compiled file's own value.
                _ => {}
            }
        }
    }
}

/// `over` written over `base`: named sections merge by name, everything else is replaced.
fn over(mut base: Document, over: Document) -> Document {
    let Value::Object(top) = over.value else {
        return base;
    };
    if !base.value.is_object() {
        base.value = Value::Object(Map::new());
    }
    let Value::Object(merged) = &mut base.value else {
        return base;
    };
    for (key, value) in top {
        let section = format!("/{}", escape_segment(&key));
        match (merged.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(entries))
                if NAMED.contains(&key.as_str()) =>
            {
                for (name, entry) in entries {
                    let pointer = format!("{section}/{}", escape_segment(&name));
                    base.index.remove_tree(&pointer);
                    base.index.graft(&over.index, &pointer, &pointer);
                    existing.insert(name, entry);
                }
            }
            (_, value) => {
                base.index.remove_tree(&section);
                base.index.graft(&over.index, &section, &section);
                merged.insert(key, value);
            }
        }
    }
    base.index.graft(&over.index, "", "");
    base.duplicates = over.duplicates;
    base
}

/// `to` as a path relative to `from` (both absolute and normalised).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in shared..from.len() {
        out.push("..");
    }
    for component in &to[shared..] {
        out.push(component.as_os_str());
    }
    out
}
