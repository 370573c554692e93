//! Pass 3, templates: every role's prompt template exists inside the project, compiles, and
//! reads only variables the engine provides — so a run never fails on its first render.
//!
//! Files pulled in with `{% include %}`, `{% import %}`, `{% from %}` or `{% extends %}` (string
//! literal names, resolved next to the including file) are checked the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use minijinja::Environment;

use crate::pipeline::codes;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::lexical_path::normalize;
use crate::pipeline::located_yaml::escape_segment;
use crate::pipeline::model::Pipeline;
use crate::pipeline::pass_context::Ctx;
use crate::pipeline::prompt_render::Renderer;
use crate::pipeline::source::{Entry, SourceFiles, stays_inside};
use crate::pipeline::template_check::{Finding, Problem, check_role};
use crate::pipeline::template_text::{located, read_limited, span_of};
use crate::pipeline::template_variables::RoleView;

/// Check every role's template. Returns the texts of the templates read, for snippets.
pub(crate) fn check(
    pipeline: &Pipeline,
    ctx: &mut Ctx<'_>,
    files: &Arc<dyn SourceFiles>,
) -> Vec<(PathBuf, String)> {
    let pipeline_dir = ctx
        .file
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let pipeline_dir = if pipeline_dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        pipeline_dir
    };
    let Some(canonical_dir) = files.canonicalize(&pipeline_dir) else {
        // The pipeline's folder is not among the files (compiled from memory); nothing to resolve
        // against.
        return Vec::new();
    };
    // The project is the folder holding the pipeline's folder (`pipelines/` → the repo).
    let root = canonical_dir
        .parent()
        .map_or_else(|| canonical_dir.clone(), Path::to_path_buf);
    let mut checker = Checker {
        files: files.as_ref(),
        inputs: pipeline.inputs.keys().cloned().collect(),
        root,
        sources: Vec::new(),
        visited: BTreeSet::new(),
        shown: BTreeMap::new(),
        texts: BTreeMap::new(),
        emitted: BTreeSet::new(),
    };
    let slots = crate::pipeline::kinds::lower(pipeline.kinds.as_ref());
    for (id, role) in &pipeline.roles {
        let pointer = format!("/roles/{}/template", escape_segment(id));
        let before = ctx.diagnostics.len();
        let real =
            checker.role_template(&pipeline_dir, &canonical_dir, &role.template, &pointer, ctx);
        if let Some(real) = &real
            && ctx.diagnostics.len() == before
        {
            // The variables, as this role's context holds them.
            let view = RoleView::new(&role.sees, &slots);
            for finding in check_role(real, &checker.texts, view, &checker.inputs) {
                if let Some(d) = checker.diagnostic(id, &finding) {
                    ctx.emit(d);
                }
            }
        }
        // Render only what checked clean, so one mistake is reported once.
        if let Some(real) = real
            && !ctx.diagnostics[before..].iter().any(Diagnostic::is_error)
        {
            let renderer = Renderer::new(&checker.root, pipeline, &checker.shown, files);
            if let Some(d) = renderer.render(&real, id) {
                ctx.emit(d);
            }
        }
        if let Some(adapter) = &role.adapter {
            let pointer = format!("/roles/{}/adapter/command", escape_segment(id));
            checker.argv_paths(&canonical_dir, adapter.command(), &pointer, ctx);
        }
    }
    checker.sources
}

struct Checker<'f> {
    files: &'f dyn SourceFiles,
    /// Declared input names (`inputs.<name>` in templates).
    inputs: Vec<String>,
    root: PathBuf,
    sources: Vec<(PathBuf, String)>,
    visited: BTreeSet<PathBuf>,
    /// Real path of each template read → the path diagnostics show.
    shown: BTreeMap<PathBuf, PathBuf>,
    /// Real path of each template read → its text.
    texts: BTreeMap<PathBuf, String>,
    /// Findings already reported (a partial shared by several roles is reported once).
    emitted: BTreeSet<(PathBuf, usize, usize, String)>,
}

impl Checker<'_> {
    /// A finding of the variable check for `role` as a diagnostic, unless already reported.
    fn diagnostic(&mut self, role: &str, finding: &Finding) -> Option<Diagnostic> {
        let shown = self
            .shown
            .get(&finding.file)
            .cloned()
            .unwrap_or_else(|| finding.file.clone());
        let text = self.texts.get(&finding.file).map_or("", String::as_str);
        let span = Some(span_of(text, finding.start, finding.end));
        let d = match &finding.problem {
            Problem::Unknown { name, why: None } => Diagnostic::new(
                &codes::UNKNOWN_TEMPLATE_VARIABLE,
                &shown,
                format!("template reads `{name}`, which the engine does not provide"),
            )
            .label("undefined at render time")
            .hint(variable_hint(name)),
            Problem::Unknown { name, why: Some(why) } => Diagnostic::new(
                &codes::UNKNOWN_TEMPLATE_VARIABLE,
                &shown,
                format!("template reads `{name}`, which the engine does not provide"),
            )
            .label(why.clone())
            .hint("see the variables and their fields in `crumb explain crumb::unknown-template-variable`"),
            Problem::Unseen { name, kinds } => {
                let label = if kinds.is_empty() {
                    format!("absent from `{role}`'s context: no kind of this pipeline fills it")
                } else {
                    format!(
                        "absent from `{role}`'s context: its `sees:` lists none of {}",
                        kinds.join(", ")
                    )
                };
                let hint = match kinds.first() {
                    Some(kind) => format!(
                        "add `{kind}` to `{role}`'s `sees:`, or guard the read with `{{% if {name} is defined %}}`"
                    ),
                    None => format!("guard the read with `{{% if {name} is defined %}}`, or remove it"),
                };
                Diagnostic::new(
                    &codes::TEMPLATE_READS_UNSEEN,
                    &shown,
                    format!("template reads `{name}`, which role `{role}` does not see"),
                )
                .label(label)
                .hint(hint)
            }
            Problem::ShapeUnknown { path, why } => Diagnostic::new(
                &codes::TEMPLATE_SHAPE_UNKNOWN,
                &shown,
                format!("cannot check `{path}`: it is read off {why}, whose shape is not known"),
            )
            .label("checked only when the prompt renders")
            .hint("read the field off a context variable, a loop over one, a `set` of one, a macro called with one, or a filter whose result is known"),
        };
        let key = (
            finding.file.clone(),
            finding.start,
            finding.end,
            d.message.clone(),
        );
        self.emitted.insert(key).then(|| d.at(span))
    }

    fn role_template(
        &mut self,
        shown_dir: &Path,
        real_dir: &Path,
        template: &str,
        pointer: &str,
        ctx: &mut Ctx<'_>,
    ) -> Option<PathBuf> {
        let written = Path::new(template);
        let real = normalize(&real_dir.join(written));
        if written.is_absolute() || !self.inside_root(&real) {
            let d = ctx
                .at(
                    &codes::TEMPLATE_ESCAPES_ROOT,
                    pointer,
                    format!("template `{template}` is outside the project"),
                )
                .label("leaves the project folder")
                .hint(format!(
                    "keep templates inside `{}`, e.g. `../templates/<role>.md.j2`",
                    self.root
                        .file_name()
                        .map_or_else(|| "/".into(), |n| n.to_string_lossy().into_owned())
                ));
            ctx.emit(d);
            return None;
        }
        let shown = normalize(&shown_dir.join(written));
        let entry = self.files.entry(&real);
        if entry != Entry::File {
            // A FIFO would block the read and a device never end: refused at the role's line.
            let (code, message, label, hint) = if entry == Entry::Other {
                (
                    &codes::FILE_UNREADABLE,
                    format!("template `{template}` is not a regular file"),
                    format!("{} is not a regular file", shown.display()),
                    "a template must be a readable UTF-8 text file",
                )
            } else {
                (
                    &codes::MISSING_TEMPLATE,
                    format!("template `{template}` not found"),
                    format!("no file at {}", shown.display()),
                    "template paths are relative to the pipeline file",
                )
            };
            ctx.emit(ctx.at(code, pointer, message).label(label).hint(hint));
            return None;
        }
        self.template_file(&real, &shown, ctx);
        Some(real)
    }

    /// The path elements of a role's `command` argv exist inside the project, under the same
    /// confinement as templates (the program runs with the session as its working directory, so
    /// the runtime passes these paths resolved).
    fn argv_paths(&self, real_dir: &Path, argv: &[String], pointer: &str, ctx: &mut Ctx<'_>) {
        for (i, arg) in argv.iter().enumerate() {
            if !crate::pipeline::argv::is_path(arg) {
                continue;
            }
            let real = normalize(&real_dir.join(arg));
            let problem = if Path::new(arg).is_absolute() || !self.inside_root(&real) {
                Some(("is outside the project", "leaves the project folder"))
            } else if self.files.entry(&real) != Entry::File {
                Some(("not found", "no such file"))
            } else {
                None
            };
            if let Some((what, label)) = problem {
                let d = ctx
                    .at(
                        &codes::COMMAND_PATH,
                        &format!("{pointer}/{i}"),
                        format!("command path `{arg}` {what}"),
                    )
                    .label(label)
                    .hint(
                        "argv paths are relative to the pipeline file and stay inside the project",
                    );
                ctx.emit(d);
            }
        }
    }

    fn inside_root(&self, real: &Path) -> bool {
        stays_inside(self.files, &self.root, real)
    }

    /// Compile one template file and check its variables, then follow its includes.
    fn template_file(&mut self, real: &Path, shown: &Path, ctx: &mut Ctx<'_>) {
        if !self.visited.insert(real.to_path_buf()) {
            return;
        }
        let text = match read_limited(self.files, real) {
            Ok(text) => text,
            Err(failure) => {
                ctx.emit(
                    Diagnostic::new(&codes::TEMPLATE_SYNTAX, shown, failure.message)
                        .at(failure.span)
                        .hint("a template must be a readable UTF-8 text file"),
                );
                return;
            }
        };
        self.sources.push((shown.to_path_buf(), text.clone()));
        self.shown.insert(real.to_path_buf(), shown.to_path_buf());
        let mut env = Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::SemiStrict);
        let name = shown.to_string_lossy().into_owned();
        match env.template_from_named_str(&name, &text) {
            Err(err) => {
                let (span, detail) = located(&err, &text);
                ctx.emit(
                    Diagnostic::new(
                        &codes::TEMPLATE_SYNTAX,
                        shown,
                        format!("template does not compile: {detail}"),
                    )
                    .at(span)
                    .label("here")
                    .hint(
                        "fix the minijinja syntax; blocks are `{% ... %}`, expressions `{{ ... }}`",
                    ),
                );
            }
            Ok(_) => {
                self.texts.insert(real.to_path_buf(), text.clone());
            }
        }
        let real_dir = real
            .parent()
            .map_or_else(|| self.root.clone(), Path::to_path_buf);
        let shown_dir = shown.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        for (included, offset) in referenced_templates(&text) {
            let real_child = normalize(&real_dir.join(&included));
            let shown_child = normalize(&shown_dir.join(&included));
            let span = Some(span_of(&text, offset, offset + included.len() + 2));
            if Path::new(&included).is_absolute() || !self.inside_root(&real_child) {
                ctx.emit(
                    Diagnostic::new(
                        &codes::TEMPLATE_ESCAPES_ROOT,
                        shown,
                        format!("included template `{included}` is outside the project"),
                    )
                    .at(span)
                    .label("leaves the project folder"),
                );
            } else if self.files.entry(&real_child) == Entry::Other {
                ctx.emit(
                    Diagnostic::new(
                        &codes::FILE_UNREADABLE,
                        shown,
                        format!("included template `{included}` is not a regular file"),
                    )
                    .at(span)
                    .label(format!("{} is not a regular file", shown_child.display())),
                );
            } else if self.files.entry(&real_child) == Entry::Missing {
                ctx.emit(
                    Diagnostic::new(
                        &codes::MISSING_TEMPLATE,
                        shown,
                        format!("included template `{included}` not found"),
                    )
                    .at(span)
                    .label(format!("no file at {}", shown_child.display()))
                    .hint("included names are relative to the including template"),
                );
            } else {
                self.template_file(&real_child, &shown_child, ctx);
            }
        }
    }
}

fn variable_hint(name: &str) -> String {
    let provided: Vec<&str> = crate::pipeline::template_variables::PROVIDED_VARIABLES
        .iter()
        .map(|(n, _)| *n)
        .collect();
    match crate::pipeline::suggest::closest(name, provided.iter().copied()) {
        Some(s) => format!("did you mean `{s}`? provided: {}", provided.join(", ")),
        None => format!("provided: {}", provided.join(", ")),
    }
}

/// String-literal template names in `{% include/import/from/extends "..." %}`, with the byte
/// offset of the opening quote.
fn referenced_templates(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(open) = text[rest..].find("{%") {
        let start = rest + open + 2;
        let Some(close) = text[start..].find("%}") else {
            break;
        };
        let block = &text[start..start + close];
        let trimmed = block.trim_start_matches(['-', '+', ' ', '\t', '\n', '\r']);
        let keyword_end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        if matches!(
            &trimmed[..keyword_end],
            "include" | "import" | "from" | "extends"
        ) {
            let after = &trimmed[keyword_end..];
            let quote_at = after.find(['"', '\'']);
            if let Some(q) = quote_at
                && after[..q].trim().is_empty()
            {
                let quote = after[q..].chars().next().unwrap_or('"');
                // A literal that starts an expression (`"parts/" ~ role.id`) is not the name;
                // the render check follows such includes.
                let literal = after[q + 1..].find(quote).filter(|end| {
                    !after[q + 2 + end..]
                        .trim_start()
                        .starts_with(['~', '+', '|', '[', '.', '('])
                });
                if let Some(end) = literal {
                    let name = &after[q + 1..q + 1 + end];
                    let offset = start + (block.len() - trimmed.len()) + keyword_end + q;
                    out.push((name.to_string(), offset));
                }
            }
        }
        rest = start + close + 2;
    }
    out
}
