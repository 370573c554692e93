//! Rendering a role's prompt: its template (from the session's frozen pipeline copy, never the
//! working tree) with exactly the variables of [`crate::pipeline::template_variables`], strict undefined.
//!
//! Every key a template may read is present (things not yet written are `none`), because strict
//! undefined turns a missing attribute into a render error rather than an empty string — except
//! what the role's `sees:` keeps out, which is absent
//! ([`crate::pipeline::template_variables::RoleView`], the description `crumb validate` checks
//! templates against).

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use crate::engine::{Feedback, Intervention};
use crate::pipeline::prompt_render;
use crate::pipeline::table::{RoleSpec, TransitionTable};

/// A prompt could not be rendered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PromptError {
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
pub(crate) struct PromptInputs<'a> {
    pub goal: &'a str,
    /// `{id, dir, artifacts_dir, transcript_path}`.
    pub session: Value,
    /// The plan slot's latest (`spec`), the build slot's (`build`), the QA summary and the corrected
    /// verdict (`Value::Null` when none): the template variables keep these names whatever kinds fill
    /// the slots.
    pub spec: Value,
    pub build: Value,
    pub qa: Value,
    pub verdict: Value,
    pub feedback: Option<&'a Feedback>,
    pub interventions: &'a [Intervention],
    pub attempt: u32,
    /// `{by_kind, by_role}`: the latest output of each kind and of each role.
    pub outputs: Value,
    /// The goal was clipped; the prompt says so instead of cutting it silently.
    pub goal_truncated: bool,
    /// The run's declared inputs as recorded in `session.start` (an object; `goal` is added).
    pub inputs: Value,
}

/// Appended to a clipped goal, so the agent knows there was more.
pub(crate) const GOAL_CLIPPED_NOTE: &str =
    "\n\n[The goal was cut at 8 KiB; the full text is the `goal` event in the transcript.]";

/// The template context for `role`.
pub(crate) fn context(
    table: &TransitionTable,
    role: &RoleSpec,
    inputs: &PromptInputs<'_>,
) -> Value {
    let feedback = inputs.feedback.map_or(Value::Null, |f| {
        json!({ "text": f.text, "suggested_change": f.suggested_change, "severity": f.severity })
    });
    let goal = if inputs.goal_truncated {
        format!("{}{GOAL_CLIPPED_NOTE}", inputs.goal)
    } else {
        inputs.goal.to_owned()
    };
    let mut declared = inputs.inputs.as_object().cloned().unwrap_or_default();
    declared.insert(
        crate::pipeline::inputs::GOAL.to_owned(),
        Value::String(goal.clone()),
    );
    let mut context = json!({
        "inputs": declared,
        "goal": goal,
        "goal_truncated": inputs.goal_truncated,
        "outputs": inputs.outputs,
        "role": { "id": role.id, "produces": role.produces, "description": role.description },
        "pipeline": {
            "name": table.name,
            "description": table.description,
            "roles": table.roles.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            "pass_at": table.scoring.pass_at,
            "partial_at": table.scoring.partial_at,
            "rubric": crate::pipeline::rubric::template_value(&table.scoring.rubric),
        },
        "session": inputs.session,
        "spec": inputs.spec,
        "build": inputs.build,
        "qa": inputs.qa,
        "verdict": inputs.verdict,
        "feedback": feedback,
        "interventions": inputs.interventions.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(),
        "attempt": inputs.attempt,
    });
    crate::pipeline::template_variables::RoleView::new(&role.sees, &table.kinds)
        .restrict(&mut context);
    context
}

/// Render `role`'s template. `pipeline_file` is the frozen pipeline the template path is relative to.
pub(crate) fn render(
    pipeline_file: &Path,
    role: &RoleSpec,
    context: &Value,
) -> Result<String, PromptError> {
    let base = pipeline_file.parent().unwrap_or(Path::new("."));
    let main = normalize(&base.join(&role.template));
    // Templates may include siblings and parents, but never leave the frozen folder's root.
    let root = frozen_root(pipeline_file);
    // The same environment `crumb validate` rendered with: strict, fuel- and recursion-bounded.
    let env = prompt_render::environment(root, crate::fs::real_files());
    let shown = || main.display().to_string();
    let template =
        env.get_template(&main.to_string_lossy())
            .map_err(|e| PromptError::Template {
                path: shown(),
                message: describe(&e),
            })?;
    template
        .render(prompt_render::template_value(context))
        .map_err(|e| PromptError::Template {
            path: shown(),
            message: describe(&e),
        })
}

/// Render and write `prompts/<role>-<n>.md`; returns the rendered text.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), PromptError> {
    let err = |source| PromptError::Write {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    std::fs::write(path, text).map_err(err)
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
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn casual() -> (PathBuf, TransitionTable) {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines/casual.yaml");
        let table = crate::pipeline::compile_file(
            &file,
            &crate::pipeline::CompileOptions::default(),
            &crate::fs::real_files(),
        )
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
            outputs: json!({"by_kind": {}, "by_role": {}}),
            goal_truncated: false,
            inputs: Value::Null,
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

    /// A context with nothing written yet: every event-built part `none`.
    fn empty(goal: &str) -> PromptInputs<'_> {
        PromptInputs {
            goal,
            session: Value::Null,
            spec: Value::Null,
            build: Value::Null,
            qa: Value::Null,
            verdict: Value::Null,
            feedback: None,
            interventions: &[],
            attempt: 0,
            outputs: Value::Null,
            goal_truncated: false,
            inputs: Value::Null,
        }
    }

    #[test]
    fn a_clipped_goal_says_so_in_the_context() {
        let (_, table) = casual();
        let inputs = PromptInputs {
            goal_truncated: true,
            ..empty("long…")
        };
        let ctx = context(&table, &table.roles[0], &inputs);
        assert_eq!(ctx["goal_truncated"], true);
        assert!(
            ctx["goal"]
                .as_str()
                .is_some_and(|g| g.ends_with(GOAL_CLIPPED_NOTE))
        );
    }

    /// `sees:` removes what it keeps out: the key is absent, not `none` (the semi-strict
    /// renderer makes printing it or reading into it an error, which `crumb validate` reports
    /// first), and `outputs.by_kind` holds only the kinds the role sees.
    #[test]
    fn what_a_role_does_not_see_is_absent_not_none() {
        let (_, table) = casual();
        let inputs = PromptInputs {
            outputs: json!({"by_kind": {"spec": {"body": "s"}, "judge.score": {"body": "j"}}, "by_role": {}}),
            ..empty("g")
        };
        let verifier = table
            .roles
            .iter()
            .find(|r| !r.sees.is_empty())
            .expect("casual's verifier declares sees");
        let ctx = context(&table, verifier, &inputs);
        assert!(ctx.get("verdict").is_none(), "{ctx:#}");
        assert!(ctx["outputs"]["by_kind"].get("judge.score").is_none());
        assert_eq!(ctx["outputs"]["by_kind"]["spec"]["body"], "s");
        // Seen but not yet written: present, `none`.
        assert_eq!(ctx.get("qa"), Some(&Value::Null));
        let everyone = table
            .roles
            .iter()
            .find(|r| r.sees.is_empty())
            .expect("a role without sees");
        assert_eq!(
            context(&table, everyone, &inputs).get("verdict"),
            Some(&Value::Null)
        );
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
