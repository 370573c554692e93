//! Compile a pipeline file into the [`TransitionTable`] the engine executes.
//!
//! This is the one function `crumb validate`, `crumb run`, replay and Studio all call, so they
//! can never disagree about what a pipeline means. It runs the three passes — parse/shape,
//! schema, meaning — collecting every diagnostic, and yields a table only when there is no error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::pipeline::codes;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::loader::{self, FileKind};
use crate::pipeline::model::{AwaitWho, Check, OneOrMany, Pipeline, Route, RunStep, With};
use crate::pipeline::pass_context::Ctx;
use crate::pipeline::source::SourceFiles;
use crate::pipeline::table::{
    Action, CheckKindSpec, CheckSpec, CompiledRoute, LimitsSpec, QaRetrySpec, QaSpec, RoleSpec,
    ScoringSpec, TransitionTable, Trigger,
};
use crate::pipeline::triggers::VERDICT_TRIGGER;
use crate::pipeline::{assemble, routing, rubric, semantic, templates};
use crate::vocab::{Outcome, Severity, Verdict};

/// What to check besides the file itself.
#[derive(Debug, Clone, Copy)]
pub struct CompileOptions {
    /// Load and check the role templates. Off when compiling a copy frozen into a
    /// session (replay), whose templates are not next to it.
    pub check_templates: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            check_templates: true,
        }
    }
}

/// The result of compiling one file.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The table, present exactly when there is no error (warnings allowed).
    pub table: Option<TransitionTable>,
    /// Every problem found, errors and warnings, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// SHA-256 of the file's bytes, hex; recorded in `session.start`.
    pub source_hash: String,
    /// Text of each file a diagnostic points into (the pipeline, templates), for snippets.
    pub sources: Vec<(PathBuf, String)>,
}

impl Compiled {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Compile the pipeline at `path`, read through `files`. Unreadable files are diagnostics too.
pub fn compile_file(
    path: &Path,
    options: &CompileOptions,
    files: &Arc<dyn SourceFiles>,
) -> Compiled {
    match loader::read_file(files.as_ref(), path) {
        Ok(bytes) => compile_bytes(&bytes, path, options, files),
        Err(diagnostic) => Compiled {
            table: None,
            diagnostics: vec![*diagnostic],
            source_hash: String::new(),
            sources: Vec::new(),
        },
    }
}

/// Compile raw file content; `origin` is where it came from (templates, `extends:` and
/// `include:` resolve against it, through `files`).
pub fn compile_bytes(
    bytes: &[u8],
    origin: &Path,
    options: &CompileOptions,
    files: &Arc<dyn SourceFiles>,
) -> Compiled {
    let source_hash = crate::digest::sha256_hex(bytes);
    let mut diagnostics = Vec::new();
    let Some(text) = loader::decode(bytes, origin, &mut diagnostics) else {
        return Compiled {
            table: None,
            diagnostics,
            source_hash,
            sources: Vec::new(),
        };
    };
    let mut compiled = compile_text(text, origin, *options, files);
    compiled.source_hash = source_hash;
    compiled
}

/// Compile pipeline YAML held in memory; `origin` is the path it stands for.
pub fn compile_str(
    source: &str,
    origin: &Path,
    options: &CompileOptions,
    files: &Arc<dyn SourceFiles>,
) -> Compiled {
    compile_bytes(source.as_bytes(), origin, options, files)
}

/// `source` compiled as `t.yaml` with no files around it and no template checks: what the core's
/// own tests of the passes compile.
#[cfg(test)]
pub(crate) fn compile_alone(source: &str) -> Compiled {
    let options = CompileOptions {
        check_templates: false,
    };
    let files = crate::pipeline::source::InMemory::new().shared();
    compile_str(source, Path::new("t.yaml"), &options, &files)
}

fn compile_text(
    text: &str,
    origin: &Path,
    options: CompileOptions,
    files: &Arc<dyn SourceFiles>,
) -> Compiled {
    let mut diagnostics = Vec::new();
    let mut sources = vec![(origin.to_path_buf(), text.to_string())];
    let Some(mut document) = loader::load_document(text, origin, &mut diagnostics) else {
        return Compiled {
            table: None,
            diagnostics,
            source_hash: String::new(),
            sources,
        };
    };
    if assemble::uses_other_files(&document) {
        let assembled = assemble::assemble(&mut document, origin, &mut diagnostics, files.as_ref());
        sources.extend(assembled.sources);
    }
    let other_files = document.index.files.clone();
    // A base or fragment that could not be read may hold any top-level key: one cause, so its
    // `include-file` error is not followed by `missing-key` for what that file would have had.
    let unread = diagnostics
        .iter()
        .any(|d| d.code == codes::INCLUDE_FILE.name);
    let mut compiled = compile_document(document, origin, options, diagnostics, sources, files);
    if unread {
        compiled.diagnostics.retain(|d| {
            d.code != codes::MISSING_KEY.name || !d.message.ends_with(" in the top level")
        });
    }
    // A span in another file of an assembled pipeline names that file.
    for diagnostic in &mut compiled.diagnostics {
        if let Some(n) = diagnostic
            .span
            .and_then(|s| usize::try_from(s.file).ok()?.checked_sub(1))
            && let Some(file) = other_files.get(n)
        {
            diagnostic.file.clone_from(file);
        }
    }
    compiled
}

fn compile_document(
    document: crate::pipeline::located_yaml::Document,
    origin: &Path,
    options: CompileOptions,
    mut diagnostics: Vec<Diagnostic>,
    mut sources: Vec<(PathBuf, String)>,
    files: &Arc<dyn SourceFiles>,
) -> Compiled {
    let parsed =
        loader::parse_document::<Pipeline>(document, origin, FileKind::Pipeline, &mut diagnostics);
    let (Some(document), Some(pipeline)) = (parsed.document, parsed.model) else {
        return Compiled {
            table: None,
            diagnostics,
            source_hash: String::new(),
            sources,
        };
    };
    let mut ctx = Ctx {
        file: origin,
        index: &document.index,
        diagnostics,
        salvage: parsed.salvage,
    };
    let table = lower(&pipeline, &mut ctx);
    semantic::check(&pipeline, &table, &mut ctx);
    crate::pipeline::inputs::check(&pipeline.inputs, &mut ctx);
    routing::check(&pipeline, &table, &mut ctx);
    if options.check_templates {
        sources.extend(templates::check(&pipeline, &mut ctx, files));
    }
    let diagnostics = ctx.diagnostics;
    let has_errors = diagnostics.iter().any(Diagnostic::is_error);
    Compiled {
        table: (!has_errors).then_some(table),
        diagnostics,
        source_hash: String::new(),
        sources,
    }
}

/// Build the table from a schema-valid model. Unit errors are reported as found; the table is
/// still built (with zeros) so later checks can run and report everything at once.
fn lower(pipeline: &Pipeline, ctx: &mut Ctx<'_>) -> TransitionTable {
    let roles = pipeline
        .roles
        .iter()
        .map(|(id, role)| {
            let base = format!(
                "/roles/{}",
                crate::pipeline::located_yaml::escape_segment(id)
            );
            RoleSpec {
                id: id.clone(),
                template: role.template.clone(),
                produces: role.produces.clone(),
                wall_timeout_ms: ctx.duration(&format!("{base}/timeout/wall"), &role.timeout.wall),
                idle_timeout_ms: ctx.duration(&format!("{base}/timeout/idle"), &role.timeout.idle),
                sees: role.sees.clone(),
                fallback: role.fallback.clone(),
                description: role.description.clone(),
                adapter: role.adapter.clone(),
            }
        })
        .collect();

    let routes: Vec<CompiledRoute> = pipeline
        .routes
        .iter()
        .enumerate()
        .map(|(index, route)| lower_route(index, route))
        .collect();

    let mut by_kind: HashMap<String, Vec<usize>> = HashMap::new();
    let mut verdict_matrix = [[None; 3]; 4];
    for route in &routes {
        match &route.trigger {
            Trigger::Kind { kind, .. } => {
                by_kind.entry(kind.clone()).or_default().push(route.index);
            }
            Trigger::Verdict {
                verdicts,
                severities,
            } => {
                for verdict in verdicts {
                    for severity in severities {
                        let cell = &mut verdict_matrix[verdict.index()][severity.index()];
                        if cell.is_none() {
                            *cell = Some(route.index);
                        }
                    }
                }
            }
        }
    }

    let qa = pipeline.qa.as_ref().map(|qa| QaSpec {
        timeout_ms: ctx.duration("/qa/timeout", &qa.timeout),
        entry: qa.entry.clone(),
        checks: qa
            .checks
            .iter()
            .enumerate()
            .map(|(i, check)| lower_check(i, check, ctx))
            .collect(),
        retry: QaRetrySpec {
            max: qa.retry.max,
            backoff_ms: ctx.duration("/qa/retry/backoff", &qa.retry.backoff),
        },
    });

    let limits = &pipeline.limits;
    let limits = LimitsSpec {
        max_respec: limits.max_respec,
        max_verify: limits.max_verify,
        tokens_warn: limits.tokens.warn,
        tokens_hard: limits.tokens.hard,
        wall_clock_warn_ms: ctx.duration("/limits/wall_clock/warn", &limits.wall_clock.warn),
        wall_clock_hard_ms: ctx.duration("/limits/wall_clock/hard", &limits.wall_clock.hard),
        stuck_after_errors: limits.stuck_after_errors,
        circuit_open_after: limits.circuit.open_after,
        circuit_then: limits.circuit.then,
        max_store_mb: limits.max_store_mb,
    };

    TransitionTable {
        name: pipeline.name.clone(),
        description: pipeline.description.clone(),
        roles,
        routes,
        qa,
        kinds: crate::pipeline::kinds::lower(pipeline.kinds.as_ref()),
        declared_kinds: crate::pipeline::kinds::declared_names(pipeline.kinds.as_ref()),
        kind_schemas: crate::pipeline::kinds::schemas(pipeline.kinds.as_ref()),
        scoring: {
            let guards = pipeline.scoring.guards_for(pipeline.qa.is_some());
            ScoringSpec {
                rubric: rubric::lower(pipeline.scoring.rubric.as_deref(), &guards),
                pass_at: pipeline.scoring.pass_at,
                partial_at: pipeline.scoring.partial_at,
                guards,
            }
        },
        limits,
        inputs: crate::pipeline::inputs::lower(&pipeline.inputs),
        by_kind,
        verdict_matrix,
    }
}

/// Lower one route. Malformed combinations (several actions, `when` off a verdict route) are
/// reported by [`semantic`]; here the first action in a fixed order is taken.
fn lower_route(index: usize, route: &Route) -> CompiledRoute {
    let trigger = if route.on == VERDICT_TRIGGER {
        let when = route.when.as_ref();
        Trigger::Verdict {
            verdicts: when
                .and_then(|w| w.verdict.as_ref())
                .map_or_else(|| Verdict::ALL.to_vec(), OneOrMany::to_vec),
            severities: when
                .and_then(|w| w.severity.as_ref())
                .map_or_else(|| Severity::ALL.to_vec(), OneOrMany::to_vec),
        }
    } else {
        Trigger::Kind {
            kind: route.on.clone(),
            from: route.from.clone(),
        }
    };
    let action = if let (Some(mode), Some(combine)) = (route.join, route.combine) {
        Action::Join { mode, combine }
    } else if let Some(OneOrMany::One(role)) = &route.spawn {
        Action::Spawn { role: role.clone() }
    } else if let Some(OneOrMany::Many(roles)) = &route.spawn {
        Action::SpawnAll {
            roles: roles.clone(),
        }
    } else if route.run == Some(RunStep::Qa) {
        Action::RunQa
    } else if let Some(done) = &route.done {
        // An undeclarable word is reported by `semantic`; the table is discarded.
        let (outcome, reason) = done.resolve().unwrap_or((Outcome::Fail, String::new()));
        Action::Done { outcome, reason }
    } else if route.r#await == Some(AwaitWho::Human) {
        Action::AwaitHuman
    } else {
        // No action at all: reported by `semantic`; the table is discarded.
        Action::Done {
            outcome: Outcome::Fail,
            reason: String::new(),
        }
    };
    CompiledRoute {
        index,
        trigger,
        action,
        with_feedback: route.with == Some(With::Feedback),
        max: route.max,
    }
}

fn lower_check(i: usize, check: &Check, ctx: &mut Ctx<'_>) -> CheckSpec {
    let base = format!("/qa/checks/{i}");
    let timeout_ms = check
        .timeout()
        .map(|t| ctx.duration(&format!("{base}/timeout"), t));
    let kind = match check {
        Check::File {
            path,
            min_size,
            max_size,
            ..
        } => CheckKindSpec::File {
            path: path.clone(),
            min_bytes: min_size
                .as_ref()
                .map(|s| ctx.size(&format!("{base}/min_size"), s)),
            max_bytes: max_size
                .as_ref()
                .map(|s| ctx.size(&format!("{base}/max_size"), s)),
        },
        Check::MaxBytes { glob, limit, .. } => CheckKindSpec::MaxBytes {
            glob: glob.clone(),
            limit_bytes: ctx.size(&format!("{base}/limit"), limit),
        },
        Check::Html { path, .. } => CheckKindSpec::Html { path: path.clone() },
        Check::Command {
            argv,
            cwd,
            env,
            expect_exit,
            ..
        } => CheckKindSpec::Command {
            argv: argv.clone(),
            cwd: cwd.clone(),
            env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            expect_exit: *expect_exit,
        },
        Check::Browser {
            wait_for,
            settle,
            fail_on,
            keys,
            clicks,
            screenshot,
            require_non_blank,
            ..
        } => CheckKindSpec::Browser {
            wait_for: wait_for.clone(),
            settle_ms: ctx.duration(&format!("{base}/settle"), settle),
            fail_on: fail_on.clone(),
            keys: keys.clone(),
            clicks: clicks.clone(),
            screenshot: *screenshot,
            require_non_blank: *require_non_blank,
        },
        Check::AcPredicates { .. } => CheckKindSpec::AcPredicates,
    };
    CheckSpec {
        id: check.id().to_string(),
        blocking: check.blocking(),
        timeout_ms,
        kind,
    }
}
