//! What a role's prompt is rendered from: the session's state plus the latest events of the plan
//! and build slots (whatever kinds the pipeline declares for them; the template variables `spec`
//! and `build`) and the latest QA result (the state keeps only summaries of those). A role that
//! declares `sees:` gets only what comes from those kinds (`outputs` included; the rest is
//! absent, `RoleView`); `goal`, routed feedback and the person's messages always reach it.

use serde_json::{Value, json};

use super::Session;
use crate::engine::State;
use crate::engine::effect::Spawn;
use crate::pipeline::kinds::Slot;
use crate::pipeline::table::{RoleSpec, TransitionTable};
use crate::pipeline::template_variables::RoleView;
use crate::runtime::prompt::{self, PromptInputs};
use crate::transcript::{Event, Kind};

/// The latest events the prompts quote.
#[derive(Default)]
pub(super) struct Latest {
    build: Option<Event>,
    qa: Option<Event>,
    outputs: crate::runtime::outputs::Outputs,
}

impl Latest {
    /// Remember `event` if a prompt may quote it: the build slot's kinds are the ones `table`
    /// declares `slot: build` (the plan's summary is in the state).
    pub(super) fn note(&mut self, event: &Event, table: &TransitionTable) {
        self.outputs.note(event);
        if event.kind == Kind::QaResult {
            self.qa = Some(event.clone());
        } else if table.slot(event.kind.as_str()) == Some(Slot::Build) {
            self.build = Some(event.clone());
        }
    }
}

/// Why a prompt is not ready.
pub(super) enum PromptFailure {
    /// The template could not be rendered (the turn fails, as the pipeline's fault).
    Render(String),
    /// The rendered prompt could not be written (a full disk: the machine's fault).
    Write(String),
}

/// Render `role`'s prompt for `spawn` and write it to `prompts/<role>-<n>.md`.
pub(super) fn render_prompt(
    session: &Session,
    pipeline_file: &std::path::Path,
    state: &State,
    latest: &Latest,
    spawn: &Spawn,
    role: &RoleSpec,
) -> Result<String, PromptFailure> {
    let dir = &session.dir;
    let view = RoleView::new(&role.sees, &session.table.kinds);
    let shown = |name: &str, build: &dyn Fn() -> Value| {
        if view.shows(name) {
            build()
        } else {
            Value::Null
        }
    };
    let inputs = PromptInputs {
        goal: state.goal.as_deref().unwrap_or(""),
        session: json!({
            "id": dir.id(),
            "dir": dir.path().display().to_string(),
            "artifacts_dir": dir.artifacts().display().to_string(),
            "transcript_path": dir.transcript().display().to_string(),
        }),
        spec: shown("spec", &|| plan_context(state)),
        build: shown("build", &|| build_context(latest)),
        qa: shown("qa", &|| qa_context(latest)),
        verdict: shown("verdict", &|| verdict_context(state)),
        feedback: spawn.feedback.as_ref(),
        interventions: &spawn.interventions,
        attempt: spawn.attempt,
        outputs: latest.outputs.to_value(&role.sees),
        goal_truncated: latest.outputs.goal_truncated(),
        inputs: json!(session.config.inputs),
    };
    let context = prompt::context(&session.table, role, &inputs);
    let text = prompt::render(pipeline_file, role, &context)
        .map_err(|e| PromptFailure::Render(e.to_string()))?;
    prompt::write(&dir.prompt_path(&role.id, spawn.attempt + 1), &text)
        .map_err(|e| PromptFailure::Write(e.to_string()))?;
    Ok(text)
}

fn plan_context(state: &State) -> Value {
    let Some(spec) = &state.plan else {
        return Value::Null;
    };
    let predicates: Vec<Value> = spec
        .ac_predicates
        .iter()
        .map(|p| {
            let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            json!({ "id": field("id"), "intent": field("intent"), "predicate": field("predicate") })
        })
        .collect();
    json!({ "body": spec.body, "acceptance_criteria": spec.acceptance_criteria, "ac_predicates": predicates })
}

fn build_context(latest: &Latest) -> Value {
    let Some(build) = &latest.build else {
        return Value::Null;
    };
    json!({ "body": build.body, "artifacts": build.artifacts.iter().map(|a| a.path.as_str()).collect::<Vec<_>>() })
}

fn qa_context(latest: &Latest) -> Value {
    let Some(qa) = &latest.qa else {
        return Value::Null;
    };
    let data = qa.data.clone().unwrap_or_default();
    let code = data.get("exec_exit_code").and_then(Value::as_i64);
    let checks: Vec<Value> = data
        .get("checks")
        .and_then(Value::as_array)
        .map(|checks| {
            checks
                .iter()
                .map(|c| {
                    let text = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_owned);
                    let summary = text("summary").or_else(|| {
                        c.get("findings")?.as_array()?.first()?.get("message")?.as_str().map(str::to_owned)
                    });
                    json!({ "id": text("id").unwrap_or_default(), "status": text("status").unwrap_or_default(), "summary": summary,
                        "stdout_tail": crate::runtime::outputs::check_tail(c, "stdout"), "stderr_tail": crate::runtime::outputs::check_tail(c, "stderr") })
                })
                .collect()
        })
        .unwrap_or_default();
    let findings: Vec<String> = data
        .get("findings")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    json!({ "exec_exit_code": code, "passed": code == Some(0), "findings": findings, "checks": checks })
}

fn verdict_context(state: &State) -> Value {
    let Some(latest) = &state.verification.latest else {
        return Value::Null;
    };
    json!({
        "verdict": latest.corrected.verdict,
        "aggregate": latest.corrected.aggregate,
        "scores": latest.corrected.dimensions,
        "audit": latest.corrections.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
    })
}
