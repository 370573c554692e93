//! `crumb init [dir] [--from casual|doc-review|code]`: a new project from a shipped pipeline — the
//! pipeline with its schema modeline, its templates (and the example agents `doc-review` and
//! `code` run), the schema itself, the shipped presets with their schema, editor settings (the schema for yaml-language-server, and
//! `crumb lsp` for VS Code, Neovim and Helix: [`init_editors`]), and a CI workflow that
//! validates and proves (`crumb check`) the pipelines before any token is spent. The shipped
//! files are embedded at build time, so `init` works from an installed binary. Nothing that
//! exists is overwritten.

use crate::fs::stdout::outln;
use std::path::{Path, PathBuf};

use super::error::{CommandError, ExitStatus};
use super::init_editors;
use crate::pipeline::compile::{CompileOptions, compile_file};
use crate::pipeline::schema;

/// The pipelines `init` can start from.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum From {
    Casual,
    DocReview,
    Code,
}

/// Arguments of `crumb init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to create the project (default: the current folder).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The shipped pipeline to start from.
    #[arg(long, value_enum, default_value = "casual")]
    pub from: From,
}

const CONTEXT: (&str, &str) = (
    "templates/_context.md.j2",
    include_str!("../../templates/_context.md.j2"),
);
const PROTOCOL: (&str, &str) = (
    "templates/_event_protocol.md.j2",
    include_str!("../../templates/_event_protocol.md.j2"),
);

/// The files of each starting point, as `(path in the project, content)`.
fn files(from: From) -> Vec<(&'static str, &'static str)> {
    match from {
        From::Casual => vec![
            (
                "pipelines/casual.yaml",
                include_str!("../../pipelines/casual.yaml"),
            ),
            (
                "templates/planner-lead.md.j2",
                include_str!("../../templates/planner-lead.md.j2"),
            ),
            (
                "templates/builder.md.j2",
                include_str!("../../templates/builder.md.j2"),
            ),
            (
                "templates/verifier.md.j2",
                include_str!("../../templates/verifier.md.j2"),
            ),
            CONTEXT,
            PROTOCOL,
        ],
        From::DocReview => vec![
            (
                "pipelines/doc-review.yaml",
                include_str!("../../pipelines/doc-review.yaml"),
            ),
            (
                "templates/writer.md.j2",
                include_str!("../../templates/writer.md.j2"),
            ),
            (
                "templates/reviewer.md.j2",
                include_str!("../../templates/reviewer.md.j2"),
            ),
            CONTEXT,
            PROTOCOL,
            (
                "examples/agents/writer.py",
                include_str!("../../examples/agents/writer.py"),
            ),
            (
                "examples/agents/reviewer.py",
                include_str!("../../examples/agents/reviewer.py"),
            ),
        ],
        From::Code => vec![
            (
                "pipelines/code.yaml",
                include_str!("../../pipelines/code.yaml"),
            ),
            (
                "templates/specifier.md.j2",
                include_str!("../../templates/specifier.md.j2"),
            ),
            (
                "templates/implementer.md.j2",
                include_str!("../../templates/implementer.md.j2"),
            ),
            (
                "templates/code-reviewer.md.j2",
                include_str!("../../templates/code-reviewer.md.j2"),
            ),
            CONTEXT,
            PROTOCOL,
            (
                "examples/agents/specifier.py",
                include_str!("../../examples/agents/specifier.py"),
            ),
            (
                "examples/agents/implementer.py",
                include_str!("../../examples/agents/implementer.py"),
            ),
            (
                "examples/agents/code_reviewer.py",
                include_str!("../../examples/agents/code_reviewer.py"),
            ),
        ],
    }
}

/// The shipped presets, so `--preset claude|codex|gemini|cross|mock` works in a new project as
/// the README says (their modelines name `schemas/preset.schema.json`, written beside them).
const PRESETS: [(&str, &str); 5] = [
    (
        "presets/claude.yaml",
        include_str!("../../presets/claude.yaml"),
    ),
    (
        "presets/codex.yaml",
        include_str!("../../presets/codex.yaml"),
    ),
    (
        "presets/gemini.yaml",
        include_str!("../../presets/gemini.yaml"),
    ),
    (
        "presets/cross.yaml",
        include_str!("../../presets/cross.yaml"),
    ),
    ("presets/mock.yaml", include_str!("../../presets/mock.yaml")),
];

/// Validation (with GitHub annotations) and `crumb check` in CI, before any run spends tokens.
const CI_WORKFLOW: &str = "name: crumb
on: [push, pull_request]
jobs:
  validate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      # Put `crumb` on PATH the way your team ships it (a release binary, or
      # `cargo install --locked --path <a crumb checkout>`), then validate with GitHub
      # annotations, and prove every route ends (no dead end, every loop bounded), before any
      # run spends tokens:
      - run: crumb validate --format github --deny-warnings pipelines/
      - run: crumb check pipelines/
";

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    let schema_text = schema::render(&schema::pipeline_schema());
    let mut plan: Vec<(&str, &str)> = files(args.from);
    let preset_schema = schema::render(&schema::preset_schema());
    plan.push(("schemas/pipeline.schema.json", &schema_text));
    plan.extend(PRESETS);
    plan.push(("schemas/preset.schema.json", &preset_schema));
    plan.push((".vscode/settings.json", init_editors::VSCODE_SETTINGS));
    plan.push((".nvim.lua", init_editors::NEOVIM));
    plan.push((".helix/languages.toml", init_editors::HELIX));
    plan.push((".github/workflows/crumb.yml", CI_WORKFLOW));
    let existing: Vec<&str> = plan
        .iter()
        .map(|(path, _)| *path)
        .filter(|path| args.dir.join(path).exists())
        .collect();
    if !existing.is_empty() {
        return Err(CommandError::usage(format!(
            "{} already holds {}; nothing was written (move them or init another folder)",
            args.dir.display(),
            existing.join(", ")
        )));
    }
    for (path, text) in &plan {
        write(&args.dir.join(path), text)
            .map_err(|e| CommandError::failure(format!("cannot write {path}")).because(e))?;
        outln!("created  {}", args.dir.join(path).display());
    }
    let pipeline = args.dir.join(plan[0].0);
    let compiled = compile_file(
        &pipeline,
        &CompileOptions::default(),
        &crate::fs::real_files(),
    );
    if compiled.table.is_none() {
        return Err(CommandError::invalid_pipeline(format!(
            "{} does not validate: run `crumb validate` on it",
            pipeline.display()
        )));
    }
    outln!(
        "valid    {}\nnext     crumb run {} \"<your pitch>\"",
        pipeline.display(),
        pipeline.display()
    );
    Ok(ExitStatus::SUCCESS)
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
}
