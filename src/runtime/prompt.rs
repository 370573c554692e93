//! Rendering a role's prompt: its template (from the session's frozen pipeline copy, never the
//! working tree) with exactly the variables of [`crate::pipeline::context`], strict undefined.
//!
//! Every key a template may read is always present (absent things are `none`), because strict
//! undefined turns a missing attribute into a render error rather than an empty string.

use std::path::{Path, PathBuf};

use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Value, json};

use crate::engine::{Feedback, Intervention};
use crate::pipeline::table::{RoleSpec, TransitionTable};
use crate::pipeline::templates;
use crumb_core::confine;

/// Largest template file read (prompts are a few KB).
const MAX_TEMPLATE_BYTES: u64 = 1024 * 1024;

/// A prompt could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("template {path}: {message}")]
    Template { path: String, message: String },
    #[error("cannot write prompt {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Everything a template can see, gathered by the coordinator from its state.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    pub goal: &'a str,
    /// `{id, dir, artifacts_dir, transcript_path}`.
    pub session: Value,
    /// The latest spec, build, QA summary and corrected verdict (`Value::Null` when none).
    pub spec: Value,
    pub build: Value,
    pub qa: Value,
    pub verdict: Value,
    pub feedback: Option<&'a Feedback>,
    pub interventions: &'a [Intervention],
    pub attempt: u32,
}

/// The template context for `role`.
pub fn context(table: &TransitionTable, role: &RoleSpec, inputs: &PromptInputs<'_>) -> Value {
    let feedback = inputs.feedback.map_or(Value::Null, |f| {
        json!({ "text": f.text, "suggested_change": f.suggested_change, "severity": f.severity })
    });
    json!({
        "goal": inputs.goal,
        "role": { "id": role.id, "produces": role.produces, "description": role.description },
        "pipeline": {
            "name": table.name,
            "description": table.description,
            "roles": table.roles.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            "pass_at": table.scoring.pass_at,
            "partial_at": table.scoring.partial_at,
        },
        "session": inputs.session,
        "spec": inputs.spec,
        "build": inputs.build,
        "qa": inputs.qa,
        "verdict": inputs.verdict,
        "feedback": feedback,
        "interventions": inputs.interventions.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(),
        "attempt": inputs.attempt,
    })
}

/// Render `role`'s template. `pipeline_file` is the frozen pipeline the template path is relative to.
pub fn render(
    pipeline_file: &Path,
    role: &RoleSpec,
    context: &Value,
) -> Result<String, PromptError> {
    let base = pipeline_file.parent().unwrap_or(Path::new("."));
    let main = normalize(&base.join(&role.template));
    // Templates may include siblings and parents, but never leave the frozen folder's root.
    let root = frozen_root(pipeline_file);
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let loader_root = root.clone();
    env.set_loader(move |name| {
        let path = normalize(Path::new(name));
        // Lexically and through symlinks: a frozen folder cannot lead out either way.
        if !confine::stays_inside(&loader_root, &path) {
            return Ok(None);
        }
        read_template(&path).map(Some).map_err(|message| {
            minijinja::Error::new(minijinja::ErrorKind::TemplateNotFound, message)
        })
    });
    env.set_path_join_callback(|name, parent| {
        let parent_dir = Path::new(parent).parent().unwrap_or(Path::new("/"));
        normalize(&parent_dir.join(name))
            .to_string_lossy()
            .into_owned()
            .into()
    });
    let shown = || main.display().to_string();
    let template =
        env.get_template(&main.to_string_lossy())
            .map_err(|e| PromptError::Template {
                path: shown(),
                message: describe(&e),
            })?;
    template
        .render(to_template_value(context))
        .map_err(|e| PromptError::Template {
            path: shown(),
            message: describe(&e),
        })
}

/// Render and write `prompts/<role>-<n>.md`; returns the rendered text.
pub fn write(path: &Path, text: &str) -> Result<(), PromptError> {
    let err = |source| PromptError::Write {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    std::fs::write(path, text).map_err(err)
}

/// A JSON value as a template value (the `serde` bridge of minijinja is not compiled in).
pub(crate) fn to_template_value(value: &Value) -> minijinja::Value {
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
            minijinja::Value::from(items.iter().map(to_template_value).collect::<Vec<_>>())
        }
        Value::Object(map) => minijinja::Value::from(
            map.iter()
                .map(|(k, v)| (k.clone(), to_template_value(v)))
                .collect::<std::collections::BTreeMap<String, minijinja::Value>>(),
        ),
    }
}

fn describe(error: &minijinja::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

fn read_template(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    if size > MAX_TEMPLATE_BYTES {
        return Err(format!(
            "{} is {size} bytes; the limit is {MAX_TEMPLATE_BYTES}",
            path.display()
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The `pipeline/` folder of a session holding `pipeline_file` (or its parent's parent when the
/// file is not inside one, e.g. a pipeline rendered straight from a checkout).
fn frozen_root(pipeline_file: &Path) -> PathBuf {
    let absolute = normalize(pipeline_file);
    absolute
        .ancestors()
        .find(|dir| {
            dir.file_name()
                .is_some_and(|n| n == crate::runtime::freeze::FROZEN_DIR)
        })
        .map(Path::to_path_buf)
        .or_else(|| {
            absolute
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Resolve `.` and `..` lexically, making the path absolute against the current directory.
fn normalize(path: &Path) -> PathBuf {
    if path.is_absolute() {
        templates::normalize(path)
    } else {
        templates::normalize(&std::env::current_dir().unwrap_or_default().join(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn casual() -> (PathBuf, TransitionTable) {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines/casual.yaml");
        let table =
            crate::pipeline::compile_file(&file, &crate::pipeline::CompileOptions::default())
                .table
                .expect("casual compiles");
        (file, table)
    }

    /// Render every role of the shipped pipeline, with nothing known yet or with everything known.
    fn render_all(goal: &str, message: &str, full: bool) -> Vec<String> {
        let (file, table) = casual();
        let feedback = Feedback {
            source_event_id: "01J00000000000000000000000".into(),
            verdict: crate::vocab::Verdict::Fail,
            severity: crate::vocab::Severity::Important,
            text: message.into(),
            suggested_change: Some(message.into()),
        };
        let interventions = [Intervention {
            event_id: "01J00000000000000000000001".into(),
            text: message.into(),
        }];
        let pick = |value: Value| if full { value } else { Value::Null };
        let inputs = PromptInputs {
            goal,
            session: json!({"id": "S", "dir": "/s", "artifacts_dir": "/s/artifacts", "transcript_path": "/s/t.jsonl"}),
            spec: pick(
                json!({"body": message, "acceptance_criteria": [message], "ac_predicates": [{"id": "AC1", "intent": message, "predicate": "true"}]}),
            ),
            build: pick(json!({"body": message, "artifacts": ["artifacts/game/index.html"]})),
            qa: pick(
                json!({"exec_exit_code": 1, "passed": false, "findings": [message], "checks": [{"id": "boots", "status": "fail", "summary": null}]}),
            ),
            verdict: pick(
                json!({"verdict": "FAIL", "aggregate": 12.0, "scores": [1, 0, 2, 3, 4, 2], "audit": ["pass_requires_qa"]}),
            ),
            feedback: full.then_some(&feedback),
            interventions: if full { &interventions } else { &[] },
            attempt: u32::from(full),
        };
        table
            .roles
            .iter()
            .map(|role| {
                render(&file, role, &context(&table, role, &inputs))
                    .unwrap_or_else(|e| panic!("{}: {e}", role.id))
            })
            .collect()
    }

    #[test]
    fn every_shipped_template_renders_with_and_without_history() {
        for full in [false, true] {
            let prompts = render_all("a 30-second dodger", "make the rocks slower", full);
            assert!(prompts.iter().all(|p| p.contains("a 30-second dodger")));
            assert_eq!(
                prompts.iter().any(|p| p.contains("make the rocks slower")),
                full
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn text_from_people_and_agents_is_data_never_template(goal in ".{1,80}", message in ".{1,80}") {
            let goal = format!("{{{{ {goal} }}}}{{% raw %}}");
            for prompt in render_all(&goal, &message, true) {
                prop_assert!(prompt.contains(&goal));
            }
        }
    }

    fn role(template: &str) -> RoleSpec {
        RoleSpec {
            adapter: None,
            id: "builder".into(),
            template: template.into(),
            produces: vec!["build".into()],
            wall_timeout_ms: 1,
            idle_timeout_ms: 1,
            sees: vec![],
            fallback: vec![],
            description: None,
        }
    }

    #[test]
    fn includes_resolve_next_to_the_including_file_and_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        let frozen = dir.path().join("pipeline");
        std::fs::create_dir_all(frozen.join("pipelines")).unwrap();
        std::fs::create_dir_all(frozen.join("templates")).unwrap();
        std::fs::write(frozen.join("pipelines/p.yaml"), "").unwrap();
        std::fs::write(
            frozen.join("templates/a.j2"),
            "A{{ goal }}{% include \"b.j2\" %}",
        )
        .unwrap();
        std::fs::write(frozen.join("templates/b.j2"), "B{{ attempt }}").unwrap();
        std::fs::write(
            frozen.join("templates/evil.j2"),
            "{% include \"../../../etc/passwd\" %}",
        )
        .unwrap();
        std::fs::write(frozen.join("templates/undef.j2"), "{{ nope.x }}").unwrap();
        let ctx = json!({ "goal": "g", "attempt": 2 });
        let pipeline = frozen.join("pipelines/p.yaml");
        assert_eq!(
            render(&pipeline, &role("../templates/a.j2"), &ctx).unwrap(),
            "AgB2"
        );
        assert!(render(&pipeline, &role("../templates/evil.j2"), &ctx).is_err());
        assert!(render(&pipeline, &role("../templates/undef.j2"), &ctx).is_err());
        assert!(render(&pipeline, &role("../../../../etc/hostname"), &ctx).is_err());
    }
}
