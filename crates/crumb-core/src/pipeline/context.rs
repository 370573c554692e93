//! The variables a role's prompt template may use.
//!
//! The runtime renders every template with exactly these top-level names (strict undefined), and
//! `crumb validate` rejects a template that reads any other name (`crumb::unknown-template-variable`).
//! Keeping the list here makes both sides agree.

/// Top-level template variables the engine provides, with what each holds.
pub const PROVIDED_VARIABLES: &[(&str, &str)] = &[
    ("goal", "the person's one-line goal (string)"),
    ("role", "this role: `{id, produces, description}`"),
    (
        "pipeline",
        "the pipeline: `{name, description, roles, pass_at, partial_at}`",
    ),
    (
        "session",
        "paths: `{id, dir, artifacts_dir, transcript_path}`",
    ),
    (
        "spec",
        "the latest spec: `{body, acceptance_criteria, ac_predicates}` or none",
    ),
    ("build", "the latest build: `{body, artifacts}` or none"),
    (
        "qa",
        "the latest QA result summary: `{exec_exit_code, passed, findings, checks}` or none",
    ),
    (
        "verdict",
        "the latest corrected verdict: `{verdict, aggregate, scores, audit}` or none",
    ),
    (
        "feedback",
        "feedback routed to this spawn (`with: feedback`): `{text, suggested_change, severity}` or none",
    ),
    (
        "interventions",
        "the person's messages aimed at this role since its last spawn (list of strings)",
    ),
    (
        "attempt",
        "how many times this role has been spawned before, counting from 0",
    ),
];

/// Whether `name` is a variable templates may use.
pub fn is_provided(name: &str) -> bool {
    PROVIDED_VARIABLES.iter().any(|(n, _)| *n == name)
}
