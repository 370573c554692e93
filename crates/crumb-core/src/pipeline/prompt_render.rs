//! Rendering prompt templates the one way both `crumb validate` and the runtime do it: strict
//! undefined, bounded fuel and recursion, includes resolved next to the including file and
//! confined to a root.
//!
//! Validation renders each role's template once against [`template_variables::sample`], so what static
//! checks cannot see — a self-include, a recursive macro, a runaway `range`, an include whose
//! name is not a template path — is an error at its line and column instead of a failed turn.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde_json::{Value, json};

use crate::pipeline::codes;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::lexical_path::normalize;
use crate::pipeline::model::Pipeline;
use crate::pipeline::source::{SourceFiles, stays_inside};
use crate::pipeline::template_text::{located, read_limited};
use crate::pipeline::template_variables::{self, TEMPLATE_FUEL, TEMPLATE_RECURSION_LIMIT};

/// An environment whose template names are absolute paths, loaded through `files` only from
/// inside `root`.
pub fn environment(root: PathBuf, files: Arc<dyn SourceFiles>) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.set_recursion_limit(TEMPLATE_RECURSION_LIMIT);
    env.set_loader(move |name| {
        let path = normalize(Path::new(name));
        // Lexically and through symlinks: an include can never lead out of the project.
        if !path.is_absolute() || !stays_inside(files.as_ref(), &root, &path) {
            return Ok(None);
        }
        read_limited(files.as_ref(), &path)
            .map(Some)
            .map_err(|failure| minijinja::Error::new(ErrorKind::TemplateNotFound, failure.message))
    });
    env.set_path_join_callback(|name, parent| {
        let parent_dir = Path::new(parent).parent().unwrap_or(Path::new("/"));
        normalize(&parent_dir.join(name))
            .to_string_lossy()
            .into_owned()
            .into()
    });
    env
}

/// A JSON value as a template value (minijinja's `serde` bridge is not compiled in).
pub fn template_value(value: &Value) -> minijinja::Value {
    match value {
        Value::Null => minijinja::Value::from(()),
        Value::Bool(b) => minijinja::Value::from(*b),
        Value::Number(n) => n
            .as_i64()
            .map(minijinja::Value::from)
            .or_else(|| n.as_u64().map(minijinja::Value::from))
            .unwrap_or_else(|| minijinja::Value::from(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => minijinja::Value::from(s.as_str()),
        Value::Array(items) => {
            minijinja::Value::from(items.iter().map(template_value).collect::<Vec<_>>())
        }
        Value::Object(map) => minijinja::Value::from(
            map.iter()
                .map(|(k, v)| (k.clone(), template_value(v)))
                .collect::<BTreeMap<String, minijinja::Value>>(),
        ),
    }
}

/// Renders a pipeline's templates against the sample context.
pub(crate) struct Renderer<'a> {
    env: Environment<'static>,
    /// [`template_variables::sample`] with this pipeline's record filled in as the runtime fills it.
    sample: Value,
    pipeline: &'a Pipeline,
    /// Real path → the path diagnostics show.
    shown: &'a BTreeMap<PathBuf, PathBuf>,
    files: &'a Arc<dyn SourceFiles>,
}

impl<'a> Renderer<'a> {
    pub(crate) fn new(
        root: &Path,
        pipeline: &'a Pipeline,
        shown: &'a BTreeMap<PathBuf, PathBuf>,
        files: &'a Arc<dyn SourceFiles>,
    ) -> Self {
        let mut kinds: Vec<&str> = pipeline
            .roles
            .values()
            .flat_map(|r| r.produces.iter().map(String::as_str))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        let roles: Vec<&str> = pipeline.roles.keys().map(String::as_str).collect();
        let mut sample = template_variables::sample(&kinds, &roles);
        sample["pipeline"] = json!({
            "name": pipeline.name,
            "description": pipeline.description.as_deref().unwrap_or(""),
            "roles": roles,
            "pass_at": pipeline.scoring.pass_at,
            "partial_at": pipeline.scoring.partial_at,
            "rubric": crate::pipeline::rubric::template_value(&crate::pipeline::rubric::lower(
                pipeline.scoring.rubric.as_deref(),
                &pipeline.scoring.guards_for(pipeline.qa.is_some()),
            )),
        });
        let mut inputs: serde_json::Map<String, Value> =
            crate::pipeline::inputs::lower(&pipeline.inputs)
                .iter()
                .map(|spec| (spec.name.clone(), spec.sample()))
                .collect();
        inputs.insert(
            crate::pipeline::inputs::GOAL.to_owned(),
            sample["goal"].clone(),
        );
        sample["inputs"] = Value::Object(inputs);
        Renderer {
            env: environment(root.to_path_buf(), Arc::clone(files)),
            sample,
            pipeline,
            shown,
            files,
        }
    }

    /// The sample context seen by `role`: its real id, `produces` and description, so names
    /// built from them (`{% include role.id ~ ".md.j2" %}`) resolve as they will at run time,
    /// without what its `sees:` keeps out (as the runtime renders it).
    fn sample_for(&self, role: &str) -> minijinja::Value {
        let mut sample = self.sample.clone();
        if let Some(spec) = self.pipeline.roles.get(role) {
            sample["role"] = json!({
                "id": role,
                "produces": spec.produces,
                "description": spec.description.as_deref().unwrap_or(""),
            });
            let slots = crate::pipeline::kinds::lower(self.pipeline.kinds.as_ref());
            template_variables::RoleView::new(&spec.sees, &slots).restrict(&mut sample);
        }
        template_value(&sample)
    }

    /// Render the template at `real` once; a failure as a diagnostic located where it happened.
    pub(crate) fn render(&self, real: &Path, role: &str) -> Option<Diagnostic> {
        let name = real.to_string_lossy();
        let outer = match self.env.get_template(&name) {
            Ok(template) => template.render(self.sample_for(role)).err()?,
            Err(err) => err,
        };
        // An include wraps the failure inside it; report the innermost, where it happened.
        let mut err = &outer;
        while let Some(inner) =
            std::error::Error::source(err).and_then(|e| e.downcast_ref::<minijinja::Error>())
        {
            err = inner;
        }
        if err.kind() == ErrorKind::UndefinedError {
            // Names and fields are checked statically; what is left undefined here is an
            // agent's `data` or a map key, which only a real session has.
            return None;
        }
        let at = err.name().map_or_else(|| real.to_path_buf(), PathBuf::from);
        let shown = self.shown.get(&at).cloned().unwrap_or(at.clone());
        let text = read_limited(self.files.as_ref(), &at).unwrap_or_default();
        let (span, detail) = located(err, &text);
        let hint = match err.kind() {
            _ if detail.contains("recursion") => {
                "an include or macro calls itself without end; remove the self-reference".to_string()
            }
            _ if err.kind() == ErrorKind::OutOfFuel || detail.contains("range") => {
                "a loop or `range` runs far longer than any prompt needs; bound it".to_string()
            }
            ErrorKind::TemplateNotFound => {
                "`include` takes a quoted template path relative to this file, e.g. `{% include \"_part.md.j2\" %}`".to_string()
            }
            _ => "the template fails with every variable present; fix the expression here".to_string(),
        };
        Some(
            Diagnostic::new(
                &codes::TEMPLATE_RENDER,
                &shown,
                format!("template fails to render: {detail}"),
            )
            .at(span)
            .label("fails here")
            .hint(hint),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::source::InMemory;

    /// Render `text` as `/project/t.j2`, with a file outside the project an include could reach.
    fn render(text: &str) -> Result<String, minijinja::Error> {
        let files = InMemory::new()
            .with("/project/t.j2", text)
            .with("/project/part.j2", "inside")
            .with("/etc/hostname", "outside")
            .shared();
        let env = environment(PathBuf::from("/project"), files);
        let sample = template_value(&template_variables::sample(&["spec"], &["writer"]));
        env.get_template("/project/t.j2")?.render(&sample)
    }

    #[test]
    fn a_runaway_loop_runs_out_of_fuel() {
        let err = render(
            "{% for i in range(10000) %}{% for j in range(10000) %}.{% endfor %}{% endfor %}",
        )
        .expect_err("out of fuel");
        assert_eq!(err.kind(), ErrorKind::OutOfFuel);
    }

    #[test]
    fn an_ordinary_prompt_renders_within_the_limits() {
        let text = "{{ goal }}{% for ac in spec.acceptance_criteria %}- {{ ac }}{% endfor %}{{ outputs.by_kind.spec.body }}";
        assert!(render(text).is_ok_and(|t| t.contains("sample goal")));
    }

    #[test]
    fn includes_cannot_leave_the_root() {
        assert!(render("{% include \"/etc/hostname\" %}").is_err());
        assert!(render("{% include \"../../../../etc/hostname\" %}").is_err());
        assert_eq!(
            render("{% include \"part.j2\" %}").ok().as_deref(),
            Some("inside")
        );
    }

    #[test]
    fn an_include_built_from_the_role_id_resolves_as_at_run_time() {
        let pipeline = Path::new("/project/pipelines/p.yaml");
        let project = |main: &str| {
            InMemory::new()
                .with(
                    pipeline,
                    "version: 1\nname: p\nroles:\n  writer: { template: ../templates/w.j2, produces: [build] }\nroutes:\n  - { on: goal, spawn: writer }\n  - { on: build, done: { outcome: pass, reason: built } }\n",
                )
                .with("/project/templates/w.j2", main)
                .with("/project/templates/parts/writer.j2", "{{ goal }}")
                .shared()
        };
        let options = crate::pipeline::CompileOptions::default();
        let clean = crate::pipeline::compile_file(
            pipeline,
            &options,
            &project("{% include \"parts/\" ~ role.id ~ \".j2\" %}"),
        );
        assert!(clean.diagnostics.is_empty(), "{:#?}", clean.diagnostics);
        let broken = crate::pipeline::compile_file(
            pipeline,
            &options,
            &project("{% include \"parts/\" ~ goal ~ \".j2\" %}"),
        );
        let codes: Vec<&str> = broken.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["crumb::template-render"]);
    }
}
