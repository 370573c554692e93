//! Freezing a pipeline into a session: the pipeline file, every template it names and the
//! template files beside them (`*.j2`, `*.jinja`, `*.jinja2`, searched a few levels deep, hidden
//! folders skipped — what an `{% include %}` can reach) are copied under `<session>/pipeline/`,
//! keeping their relative layout so the copied YAML resolves its templates
//! (`../templates/x.md.j2`) and their includes exactly as the original did. Only template files
//! are swept up, so a pipeline pointing into a big or sensitive folder copies nothing else. The
//! files a role's `adapter: { command: [...] }` names (its agent scripts) are copied the same
//! way, so the frozen pipeline's argv resolves to the frozen scripts.
//!
//! Files a pipeline `include:`s or `extends:` are copied with it, so a resume after they change
//! still runs the frozen version.
//!
//! The content hash covers every copied file (path and bytes, in path order), so `session.start`
//! pins what a replay will see, and later edits to the working tree never change it.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::pipeline::table::TransitionTable;

/// Directory inside a session holding the frozen pipeline.
pub(crate) const FROZEN_DIR: &str = "pipeline";

/// How deep below a template's folder other template files are looked for.
const MAX_DEPTH: usize = 4;
/// Extensions of files that may be included by a template.
const TEMPLATE_EXTENSIONS: [&str; 3] = ["j2", "jinja", "jinja2"];

/// Refuse to freeze more than this many files (a template directory is not a build tree).
const MAX_FILES: usize = 2_000;
/// Refuse to freeze more than this many bytes in total.
const MAX_TOTAL_BYTES: u64 = 32 << 20;

/// What [`freeze`] copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrozenPipeline {
    /// The pipeline's `name`.
    pub name: String,
    /// Role ids in declaration order.
    pub roles: Vec<String>,
    /// The frozen pipeline file, relative to the session directory (`/`-separated).
    pub pipeline_file: String,
    /// `sha256:<hex>` over every frozen file.
    pub hash: String,
    /// Every frozen file, relative to `<session>/pipeline/`, with its own SHA-256, in path order.
    pub files: Vec<(String, String)>,
}

/// The pipeline could not be frozen.
#[derive(Debug, thiserror::Error)]
pub enum FreezeError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("template directories hold more than {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")]
    TooLarge,
}

/// A pipeline as the compile that admitted it saw it: the file, its table, and the real paths
/// of every file that compile read (fragments and templates included). Freezing copies these
/// and what the table names (templates' folders, agent scripts) without reading the YAML again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FreezeSource<'a> {
    pub path: &'a Path,
    pub table: &'a TransitionTable,
    pub read: &'a [PathBuf],
}

/// Copy `source`'s pipeline, the files its compile read and its template directories into
/// `<session_dir>/pipeline/`.
pub(crate) fn freeze(
    source: FreezeSource<'_>,
    session_dir: &Path,
) -> Result<FrozenPipeline, FreezeError> {
    freeze_into(source, Some(session_dir))
}

/// The hash [`freeze`] would record for `source`, copying nothing (`crumb replay --pipeline`
/// checks it against `session.start`, `crumb run` against a dead session's).
pub(crate) fn content_hash(source: FreezeSource<'_>) -> Result<String, FreezeError> {
    freeze_into(source, None).map(|frozen| frozen.hash)
}

fn freeze_into(
    source: FreezeSource<'_>,
    session_dir: Option<&Path>,
) -> Result<FrozenPipeline, FreezeError> {
    let pipeline_path = source.path;
    let read_err = |path: &Path| {
        let path = path.display().to_string();
        move |source| FreezeError::Read { path, source }
    };
    let pipeline_path = pipeline_path
        .canonicalize()
        .map_err(read_err(pipeline_path))?;
    std::fs::metadata(&pipeline_path).map_err(read_err(&pipeline_path))?;
    let pipeline_dir = pipeline_path
        .parent()
        .unwrap_or(Path::new("/"))
        .to_path_buf();

    let mut sources: Vec<PathBuf> = vec![pipeline_path.clone()];
    // What the compile read: the fragments (their roles' paths are already relative to the
    // pipeline, as assembling rewrote them) and every template it checked.
    sources.extend(source.read.iter().cloned());
    let mut template_dirs: Vec<PathBuf> = Vec::new();
    for role in &source.table.roles {
        let template = pipeline_dir.join(&role.template);
        let template = template.canonicalize().map_err(read_err(&template))?;
        let dir = template.parent().unwrap_or(Path::new("/")).to_path_buf();
        sources.push(template);
        if !template_dirs.contains(&dir) {
            template_dirs.push(dir);
        }
        // The files a role's `command` argv names travel with the pipeline, so a resumed or
        // replayed session runs the agent it started with.
        let argv = role.adapter.as_ref().map_or(&[][..], |a| a.command());
        for arg in argv
            .iter()
            .filter(|arg| crate::pipeline::argv::is_path(arg))
        {
            let script = pipeline_dir.join(arg);
            sources.push(script.canonicalize().map_err(read_err(&script))?);
        }
    }
    let mut total = 0u64;
    for dir in &template_dirs {
        collect_templates(dir, 0, &mut sources, &mut total)?;
    }
    sources.sort();
    sources.dedup();

    let root = common_ancestor(sources.iter().map(|path| path.parent().unwrap_or(path)));
    let frozen_root = session_dir.map(|dir| dir.join(FROZEN_DIR));
    let mut files = Vec::with_capacity(sources.len());
    let mut whole = Sha256::new();
    for source in &sources {
        let relative = source.strip_prefix(&root).unwrap_or(source);
        let relative_text = slash_path(relative);
        let bytes = std::fs::read(source).map_err(read_err(source))?;
        if let Some(frozen_root) = &frozen_root {
            copy_to(&frozen_root.join(relative), &bytes)?;
        }
        whole.update(relative_text.as_bytes());
        whole.update([0]);
        whole.update((bytes.len() as u64).to_le_bytes());
        whole.update(&bytes);
        files.push((relative_text, crumb_core::digest::sha256_hex(&bytes)));
    }
    let pipeline_relative = pipeline_path.strip_prefix(&root).unwrap_or(&pipeline_path);
    Ok(FrozenPipeline {
        name: source.table.name.clone(),
        roles: source
            .table
            .roles
            .iter()
            .map(|role| role.id.clone())
            .collect(),
        pipeline_file: format!("{FROZEN_DIR}/{}", slash_path(pipeline_relative)),
        hash: format!("sha256:{:x}", whole.finalize()),
        files,
    })
}

fn copy_to(target: &Path, bytes: &[u8]) -> Result<(), FreezeError> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|source| FreezeError::Write {
            path: parent.display().to_string(),
            source,
        })?;
    }
    std::fs::write(target, bytes).map_err(|source| FreezeError::Write {
        path: target.display().to_string(),
        source,
    })
}

/// Template files under `dir` (recursively to [`MAX_DEPTH`]; hidden folders and symlinks are
/// skipped), within the limits.
fn collect_templates(
    dir: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
    total: &mut u64,
) -> Result<(), FreezeError> {
    let read_err = |path: &Path| {
        let path = path.display().to_string();
        move |source| FreezeError::Read { path, source }
    };
    for entry in std::fs::read_dir(dir).map_err(read_err(dir))? {
        let entry = entry.map_err(read_err(dir))?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(read_err(&path))?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if file_type.is_dir() && !hidden && depth < MAX_DEPTH {
            collect_templates(&path, depth + 1, out, total)?;
        } else if file_type.is_file() && is_template(&path) {
            *total += entry.metadata().map_or(0, |meta| meta.len());
            out.push(path);
            if out.len() > MAX_FILES || *total > MAX_TOTAL_BYTES {
                return Err(FreezeError::TooLarge);
            }
        }
    }
    Ok(())
}

fn is_template(path: &Path) -> bool {
    path.extension().is_some_and(|ext| {
        TEMPLATE_EXTENSIONS
            .iter()
            .any(|known| ext.eq_ignore_ascii_case(known))
    })
}

/// The deepest directory that contains every path given.
fn common_ancestor<'a>(mut dirs: impl Iterator<Item = &'a Path>) -> PathBuf {
    let Some(first) = dirs.next() else {
        return PathBuf::from("/");
    };
    let mut common: Vec<Component<'a>> = first.components().collect();
    for dir in dirs {
        let shared = common
            .iter()
            .zip(dir.components())
            .take_while(|(a, b)| *a == b)
            .count();
        common.truncate(shared);
    }
    common.iter().collect()
}

fn slash_path(path: &Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir.join("pipelines")).unwrap();
        std::fs::create_dir_all(dir.join("templates/partials")).unwrap();
        std::fs::write(
            dir.join("templates/a.md.j2"),
            "A {% include \"partials/p.j2\" %}",
        )
        .unwrap();
        std::fs::write(dir.join("templates/partials/p.j2"), "P").unwrap();
        let pipeline = dir.join("pipelines/p.yaml");
        std::fs::write(
            &pipeline,
            "version: 1\nname: p\nkinds:\n  doc: { slot: build }\n  note: {}\nroles:\n  writer: { template: ../templates/a.md.j2, produces: [doc] }\n  checker: { template: ../templates/a.md.j2, produces: [note] }\nroutes:\n  - { on: goal, spawn: writer }\n  - { on: doc, spawn: checker }\n  - { on: note, done: { outcome: pass, reason: noted } }\n",
        )
        .unwrap();
        pipeline
    }

    /// Compile `pipeline` as a session does, then hand `then` what that compile read.
    fn compiled_then<T>(pipeline: &Path, then: impl FnOnce(FreezeSource<'_>) -> T) -> T {
        let (table, read) = crate::runtime::session_read::compile_frozen_recording(pipeline)
            .expect("the test pipeline compiles");
        then(FreezeSource {
            path: pipeline,
            table: &table,
            read: &read,
        })
    }

    fn freeze_file(pipeline: &Path, dir: &Path) -> Result<FrozenPipeline, FreezeError> {
        compiled_then(pipeline, |source| freeze(source, dir))
    }

    fn hash_of(pipeline: &Path) -> String {
        compiled_then(pipeline, content_hash).unwrap()
    }

    #[test]
    fn freezes_pipeline_and_template_tree_with_relative_layout() {
        let src = tempfile::tempdir().unwrap();
        let session = tempfile::tempdir().unwrap();
        let pipeline = project(src.path());
        let frozen = freeze_file(&pipeline, session.path()).unwrap();
        assert_eq!(frozen.name, "p");
        assert_eq!(frozen.roles, ["writer", "checker"]);
        assert_eq!(frozen.pipeline_file, "pipeline/pipelines/p.yaml");
        let paths: Vec<&str> = frozen.files.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "pipelines/p.yaml",
                "templates/a.md.j2",
                "templates/partials/p.j2"
            ]
        );
        let copied = session.path().join("pipeline/templates/partials/p.j2");
        assert_eq!(std::fs::read_to_string(copied).unwrap(), "P");
        assert!(frozen.hash.starts_with("sha256:") && frozen.hash.len() == 71);
    }

    #[test]
    fn only_template_files_are_swept_up() {
        let src = tempfile::tempdir().unwrap();
        let pipeline = project(src.path());
        std::fs::write(src.path().join("templates/secrets.env"), "TOKEN=1").unwrap();
        std::fs::create_dir_all(src.path().join("templates/.git")).unwrap();
        std::fs::write(src.path().join("templates/.git/x.j2"), "hidden").unwrap();
        let frozen = freeze_file(&pipeline, tempfile::tempdir().unwrap().path()).unwrap();
        let paths: Vec<&str> = frozen.files.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "pipelines/p.yaml",
                "templates/a.md.j2",
                "templates/partials/p.j2"
            ]
        );
    }

    #[test]
    fn hash_changes_with_any_template_byte_and_only_then() {
        let src = tempfile::tempdir().unwrap();
        let pipeline = project(src.path());
        let first = freeze_file(&pipeline, tempfile::tempdir().unwrap().path()).unwrap();
        let same = freeze_file(&pipeline, tempfile::tempdir().unwrap().path()).unwrap();
        assert_eq!(first.hash, same.hash);
        std::fs::write(src.path().join("templates/partials/p.j2"), "Q").unwrap();
        let edited = freeze_file(&pipeline, tempfile::tempdir().unwrap().path()).unwrap();
        assert_ne!(first.hash, edited.hash);
    }

    #[test]
    fn included_fragments_are_frozen_hashed_and_compile_from_the_copy() {
        let src = tempfile::tempdir().unwrap();
        let session = tempfile::tempdir().unwrap();
        let pipeline = project(src.path());
        std::fs::create_dir_all(src.path().join("pipelines/shared")).unwrap();
        let fragment = src.path().join("pipelines/shared/extra.yaml");
        std::fs::write(
            &fragment,
            "roles:\n  extra: { template: ../../templates/a.md.j2, produces: [note] }\n",
        )
        .unwrap();
        let text = std::fs::read_to_string(&pipeline).unwrap();
        std::fs::write(
            &pipeline,
            text.replace("roles:", "include: [shared/extra.yaml]\nroles:"),
        )
        .unwrap();
        let frozen = freeze_file(&pipeline, session.path()).unwrap();
        assert_eq!(frozen.roles, ["writer", "checker", "extra"]);
        let paths: Vec<&str> = frozen.files.iter().map(|(path, _)| path.as_str()).collect();
        assert!(paths.contains(&"pipelines/shared/extra.yaml"), "{paths:?}");
        // The frozen copy resolves its include and the fragment's template on its own.
        let copy = session.path().join(&frozen.pipeline_file);
        let compiled = crate::pipeline::compile_file(
            &copy,
            &crate::pipeline::CompileOptions::default(),
            &crate::fs::real_files(),
        );
        // (`routes: []` has its own errors; none is about finding a file.)
        let about_files: Vec<&str> = compiled
            .diagnostics
            .iter()
            .map(|d| d.code)
            .filter(|c| c.contains("include") || c.contains("template"))
            .collect();
        assert!(about_files.is_empty(), "{:#?}", compiled.diagnostics);
        assert!(
            compiled
                .sources
                .iter()
                .any(|(path, _)| path.ends_with("shared/extra.yaml"))
        );
        // Editing the fragment in the project changes the hash, never the frozen copy.
        std::fs::write(&fragment, "roles: {}\n").unwrap();
        assert_ne!(hash_of(&pipeline), frozen.hash);
        let kept =
            std::fs::read_to_string(session.path().join("pipeline/pipelines/shared/extra.yaml"))
                .unwrap();
        assert!(kept.contains("extra:"), "{kept}");
    }

    #[test]
    fn a_template_gone_since_the_compile_is_an_error() {
        let src = tempfile::tempdir().unwrap();
        let pipeline = project(src.path());
        let result = compiled_then(&pipeline, |source| {
            std::fs::remove_file(src.path().join("templates/a.md.j2")).unwrap();
            freeze(source, tempfile::tempdir().unwrap().path())
        });
        assert!(
            matches!(result, Err(FreezeError::Read { .. })),
            "{result:?}"
        );
    }
}
