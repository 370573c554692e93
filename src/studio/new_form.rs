//! What the + New form offers, from the same code as the command line: a pipeline's declared
//! inputs and roles (its one compile), the mock's scenarios, and each adapter's readiness as
//! `crumb doctor` finds it (installed, version, logged in, the fix).

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::app::Shared;
use crate::adapters::AdapterKind;
use crate::adapters::mock::scenario::Scenario;
use crate::runtime::bindings::Environment;

#[derive(Debug, Deserialize)]
pub(crate) struct FormQuery {
    /// The pipeline, relative to the project.
    pub path: String,
}

/// `GET /api/pipelines/form?path=pipelines/casual.yaml`: the pipeline's roles and declared inputs
/// (type, values, default, required, description), and the mock's scenarios; 422 with the
/// compiler's words when it does not compile.
pub(crate) async fn form(
    State(app): State<Shared>,
    Query(query): Query<FormQuery>,
) -> Result<Json<Value>, ApiError> {
    let project = app
        .config
        .project_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .ok_or_else(|| ApiError(StatusCode::BAD_REQUEST, "no project directory".into()))?;
    let path = super::files::confine(&project, &query.path).map_err(|_| {
        ApiError(
            StatusCode::BAD_REQUEST,
            "the pipeline must be an existing file inside the project".into(),
        )
    })?;
    let value = tokio::task::spawn_blocking(move || {
        let table = crate::runtime::session_read::compile_frozen(&path)
            .map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
        let inputs: Vec<Value> = table
            .inputs
            .iter()
            .map(|input| {
                let mut spec = serde_json::to_value(input).unwrap_or_default();
                spec["required"] = json!(input.default.is_none());
                spec
            })
            .collect();
        Ok::<Value, ApiError>(json!({
            "name": table.name,
            "roles": table.roles.iter().map(|r| &r.id).collect::<Vec<_>>(),
            "inputs": inputs,
            "scenarios": Scenario::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        }))
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(Json(value))
}

/// `GET /api/adapters`: every adapter a role can be bound to, with `crumb doctor`'s finding for
/// the agent CLIs (the mock and the command adapter need nothing installed).
pub(crate) async fn adapters() -> Result<Json<Value>, ApiError> {
    let value = tokio::task::spawn_blocking(|| {
        let env = Environment::from_process();
        let checks: Vec<_> = crate::doctor::agents::agents()
            .map(|kind| crate::doctor::agents::check(kind, &env))
            .collect();
        let rows: Vec<Value> = AdapterKind::ALL
            .iter()
            .map(|kind| match checks.iter().find(|c| c.adapter == *kind) {
                Some(check) => {
                    let ready = check.path.is_some()
                        && check.logged_in != Some(crate::doctor::agents::Login::No);
                    json!({
                        "adapter": kind.as_str(),
                        "ready": ready,
                        "installed": check.path.is_some(),
                        "version": check.version,
                        "logged_in": check.logged_in,
                        "detail": check.login_detail,
                        "fix": check.fix,
                    })
                }
                None => json!({ "adapter": kind.as_str(), "ready": true, "installed": true }),
            })
            .collect();
        json!({ "adapters": rows })
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Json(value))
}
