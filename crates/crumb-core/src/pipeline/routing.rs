//! Pass 3, routing: every route names real roles, every produced kind is handled, no route is
//! shadowed, every verdict × severity cell is routed, and `goal` can reach a `done`.
//!
//! All of it is computed on the compiled table (the same one the engine runs), with the model
//! only used for locations.

use std::collections::{BTreeSet, HashSet};

use crate::pipeline::codes;
use crate::pipeline::diagnostic::Diagnostic;
use crate::pipeline::flow;
use crate::pipeline::model::{OneOrMany, Pipeline};
use crate::pipeline::pass_context::Ctx;
use crate::pipeline::role_authority;
use crate::pipeline::suggest;
use crate::pipeline::table::{Action, TransitionTable, Trigger};
use crate::pipeline::triggers::{JUDGE_SCORE_KIND, QA_RESULT_KIND};
use crate::transcript::Kind;
use crate::vocab::{RESERVED_ACTORS, Severity, Verdict};

pub(crate) fn check(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    let before = ctx.diagnostics.len();
    let unknown_trigger = unknown_kinds(pipeline, ctx);
    unknown_roles(pipeline, table, ctx);
    produces_runner_kind(pipeline, ctx);
    from_cannot_produce(pipeline, table, ctx);
    if ctx.salvage.is_partial() {
        // Schema errors cut parts of the file: what the whole graph would say is not known.
        return;
    }
    if !unknown_trigger {
        // A misspelt `on:` is the cause of the kind it meant going unhandled.
        unhandled_kinds(table, ctx);
    }
    let shadowed = shadowed_routes(table, ctx);
    exhaustiveness(table, ctx);
    qa_routes(table, ctx);
    // A broken route is one cause; what the graph would conclude from it (no path to `done`,
    // roles and routes that look unreachable) is not reported again.
    let incomplete = ctx.diagnostics[before..].iter().any(Diagnostic::is_error)
        || ctx
            .diagnostics
            .iter()
            .any(|d| d.code == codes::ROUTE_ACTION.name || d.code == codes::FAN_OUT.name);
    flow::check(table, &shadowed, incomplete, ctx);
}

/// Kinds must be words of the transcript vocabulary or declared under `kinds:`: the writer refuses
/// any other, so a route or a `produces` naming one could never be satisfied. Returns whether a route's `on:` was one.
fn unknown_kinds(pipeline: &Pipeline, ctx: &mut Ctx<'_>) -> bool {
    let mut unknown_trigger = false;
    let mut named: Vec<(String, &str)> = Vec::new();
    for (id, role) in &pipeline.roles {
        let base = format!(
            "/roles/{}",
            crate::pipeline::located_yaml::escape_segment(id)
        );
        named.extend(
            role.produces
                .iter()
                .enumerate()
                .map(|(i, k)| (format!("{base}/produces/{i}"), k.as_str())),
        );
        named.extend(
            role.sees
                .iter()
                .enumerate()
                .map(|(i, k)| (format!("{base}/sees/{i}"), k.as_str())),
        );
    }
    for (i, route) in pipeline.routes.iter().enumerate() {
        let pseudo = [
            crate::pipeline::triggers::VERDICT_TRIGGER,
            crate::pipeline::triggers::QA_ERROR_TRIGGER,
        ];
        if !pseudo.contains(&route.on.as_str()) {
            named.push((format!("/routes/{i}/on"), route.on.as_str()));
        }
    }
    let declared = crate::pipeline::kinds::declared_names(pipeline.kinds.as_ref());
    for (pointer, kind) in named {
        if Kind::vocabulary(kind).is_some() || declared.iter().any(|d| d == kind) {
            continue;
        }
        unknown_trigger |= pointer.starts_with("/routes/");
        let words = Kind::ALL
            .iter()
            .map(Kind::as_str)
            .chain(declared.iter().map(String::as_str));
        let hint = match suggest::closest(kind, words) {
            Some(s) => format!("did you mean `{s}`? `crumb explain <kind>` describes each kind; a kind of your own is declared under `kinds:`"),
            None => "declare a kind of your own under `kinds:` (e.g. `kinds: { research.note: {} }`); `crumb explain <kind>` describes the built-in kinds".to_string(),
        };
        let d = ctx
            .at(
                &codes::UNKNOWN_EVENT_KIND,
                &pointer,
                format!("`{kind}` is not an event kind"),
            )
            .label("neither in the transcript vocabulary nor declared under `kinds:`")
            .hint(hint);
        ctx.emit(d);
    }
    unknown_trigger
}

fn role_ids(table: &TransitionTable) -> impl Iterator<Item = &str> {
    table.roles.iter().map(|r| r.id.as_str())
}

fn unknown_roles(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    for (i, route) in pipeline.routes.iter().enumerate() {
        let spawned = route
            .spawn
            .as_ref()
            .map(OneOrMany::to_vec)
            .unwrap_or_default();
        let many = matches!(route.spawn, Some(OneOrMany::Many(_)));
        for (n, role) in spawned.iter().enumerate() {
            if table.is_role(role) || cut_role(role, ctx) {
                continue;
            }
            let pointer = if many {
                format!("/routes/{i}/spawn/{n}")
            } else {
                format!("/routes/{i}/spawn")
            };
            let d = ctx
                .at(
                    &codes::UNKNOWN_ROLE,
                    &pointer,
                    format!("route spawns unknown role `{role}`"),
                )
                .label("no role with this id")
                .hint(role_hint(role, table));
            ctx.emit(d);
        }
        if let Some(from) = &route.from
            && !table.is_role(from)
            && !cut_role(from, ctx)
            && !RESERVED_ACTORS.contains(&from.as_str())
        {
            let d = ctx
                .at(
                    &codes::UNKNOWN_ROLE,
                    &format!("/routes/{i}/from"),
                    format!("route listens to unknown actor `{from}`"),
                )
                .label("neither a role nor a built-in actor")
                .hint(role_hint(from, table));
            ctx.emit(d);
        }
    }
}

/// A role cannot write a runner-owned kind (role authority), so declaring one in `produces`
/// promises a turn outcome that can never happen.
fn produces_runner_kind(pipeline: &Pipeline, ctx: &mut Ctx<'_>) {
    for (id, role) in &pipeline.roles {
        for (i, kind) in role.produces.iter().enumerate() {
            if !kind.parse::<Kind>().is_ok_and(Kind::is_runner_owned) {
                continue;
            }
            let pointer = format!(
                "/roles/{}/produces/{i}",
                crate::pipeline::located_yaml::escape_segment(id)
            );
            let d = ctx
                .at(
                    &codes::PRODUCES_RUNNER_KIND,
                    &pointer,
                    format!(
                        "role `{id}` cannot produce `{kind}`: only the runner or a person writes it"
                    ),
                )
                .label("not a kind a role may write")
                .hint(format!(
                    "remove it; `crumb explain {kind}` says who writes it"
                ));
            ctx.emit(d);
        }
    }
}

/// A route `{ on: K, from: R }` where role `R` may not write `K`: the engine would ignore every
/// such event (role authority), so the route could never fire.
fn from_cannot_produce(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    for (i, route) in pipeline.routes.iter().enumerate() {
        let Some(role) = route.from.as_deref().and_then(|from| table.role(from)) else {
            continue;
        };
        let Ok(kind) = route.on.parse::<Kind>() else {
            continue; // a verdict route, or an unknown kind reported elsewhere
        };
        if role_authority::accepts_from_role(&role.produces, kind) {
            continue;
        }
        let d = ctx
            .at(
                &codes::FROM_CANNOT_PRODUCE,
                &format!("/routes/{i}/from"),
                format!("role `{}` cannot write `{kind}`", role.id),
            )
            .label(format!(
                "`{}` produces {}",
                role.id,
                produces_list(&role.produces)
            ))
            .hint(format!(
                "add `{kind}` to `{}`'s `produces`, or listen to a role that produces it",
                role.id
            ));
        ctx.emit(d);
    }
}

fn produces_list(produces: &[String]) -> String {
    if produces.is_empty() {
        return "nothing".to_owned();
    }
    let quoted: Vec<String> = produces.iter().map(|k| format!("`{k}`")).collect();
    quoted.join(", ")
}

/// A role declared in the file but cut for a schema error (already reported).
fn cut_role(id: &str, ctx: &Ctx<'_>) -> bool {
    ctx.salvage.was_cut(&format!(
        "/roles/{}",
        crate::pipeline::located_yaml::escape_segment(id)
    ))
}

fn role_hint(wrong: &str, table: &TransitionTable) -> String {
    let ids: Vec<&str> = role_ids(table).collect();
    match suggest::closest(wrong, ids.iter().copied()) {
        Some(s) => format!("did you mean `{s}`? roles: {}", ids.join(", ")),
        None => format!("roles: {}", ids.join(", ")),
    }
}

/// Whether some route handles an event of `kind` (`judge.score` also by verdict routes).
fn handled(table: &TransitionTable, kind: &str) -> bool {
    table.by_kind.contains_key(kind)
        || (kind == JUDGE_SCORE_KIND
            && table
                .routes
                .iter()
                .any(|r| matches!(r.trigger, Trigger::Verdict { .. })))
}

fn unhandled_kinds(table: &TransitionTable, ctx: &mut Ctx<'_>) {
    for role in &table.roles {
        for (i, kind) in role.produces.iter().enumerate() {
            // A kind the role may not write is reported as that (`produces-runner-kind`); that
            // no route handles it from this role is the same mistake.
            if !handled(table, kind) && !kind.parse::<Kind>().is_ok_and(Kind::is_runner_owned) {
                let pointer = format!(
                    "/roles/{}/produces/{i}",
                    crate::pipeline::located_yaml::escape_segment(&role.id)
                );
                let d = ctx
                    .at(
                        &codes::UNHANDLED_KIND,
                        &pointer,
                        format!(
                            "no route handles `{kind}`, which role `{}` produces",
                            role.id
                        ),
                    )
                    .label("nothing happens after this")
                    .hint(format!("add a route `{{ on: {kind}, ... }}`"));
                ctx.emit(d);
            }
        }
    }
}

/// Report routes an earlier route shadows; returns their indexes.
fn shadowed_routes(table: &TransitionTable, ctx: &mut Ctx<'_>) -> BTreeSet<usize> {
    let mut shadowed = BTreeSet::new();
    let mut taken: HashSet<(Verdict, Severity)> = HashSet::new();
    for (j, route) in table.routes.iter().enumerate() {
        let shadowed_by = match &route.trigger {
            Trigger::Kind { kind, from } => table.routes[..j].iter().find(|earlier| match &earlier
                .trigger
            {
                Trigger::Kind { kind: k, from: f } => k == kind && (f.is_none() || f == from),
                Trigger::Verdict { .. } => false,
            }),
            Trigger::Verdict {
                verdicts,
                severities,
            } => {
                let cells: Vec<(Verdict, Severity)> = verdicts
                    .iter()
                    .flat_map(|v| severities.iter().map(move |s| (*v, *s)))
                    .collect();
                let all_taken = !cells.is_empty() && cells.iter().all(|c| taken.contains(c));
                let first = cells.first().copied();
                taken.extend(cells);
                if all_taken {
                    first
                        .and_then(|(v, s)| table.verdict_matrix[v.index()][s.index()])
                        .map(|i| &table.routes[i])
                } else {
                    None
                }
            }
        };
        if let Some(earlier) = shadowed_by {
            shadowed.insert(j);
            let d = ctx
                .at(
                    &codes::UNREACHABLE_ROUTE,
                    &format!("/routes/{j}"),
                    format!("route {} can never fire", j + 1),
                )
                .label(format!(
                    "route {} already matches everything this one does",
                    earlier.index + 1
                ))
                .hint(
                    "first match wins: remove this route, or move it above the one that shadows it",
                );
            ctx.emit(d);
        }
    }
    shadowed
}

fn exhaustiveness(table: &TransitionTable, ctx: &mut Ctx<'_>) {
    // Verdicts only route when some role produces judge scores no `on: judge.score` route takes.
    let judged = table.roles.iter().any(|r| {
        r.produces.iter().any(|k| k == JUDGE_SCORE_KIND)
            && table.route_for(JUDGE_SCORE_KIND, &r.id).is_none()
    });
    let has_verdict_routes = table
        .routes
        .iter()
        .any(|r| matches!(r.trigger, Trigger::Verdict { .. }));
    if !judged && !has_verdict_routes {
        return;
    }
    let mut missing = Vec::new();
    for verdict in Verdict::ALL {
        for severity in Severity::ALL {
            if table.verdict_matrix[verdict.index()][severity.index()].is_none() {
                missing.push(format!("{verdict}×{severity}"));
            }
        }
    }
    if missing.is_empty() {
        return;
    }
    // Point at the last verdict route (where a new one would go), else at `routes`.
    let pointer = table
        .routes
        .iter()
        .rev()
        .find(|r| matches!(r.trigger, Trigger::Verdict { .. }))
        .map_or_else(|| "/routes".to_string(), |r| format!("/routes/{}", r.index));
    let d = ctx
        .at(
            &codes::UNROUTED_VERDICT,
            &pointer,
            format!("{} verdict × severity cell(s) have no route: {}", missing.len(), missing.join(", ")),
        )
        .label("verdict routes end here")
        .hint("add `on: verdict` routes covering these cells, or a final `{ on: verdict, ... }` without `when` as a catch-all");
    ctx.emit(d);
}

fn qa_routes(table: &TransitionTable, ctx: &mut Ctx<'_>) {
    if table.qa.is_some() && !table.routes.iter().any(|r| r.action == Action::RunQa) {
        let d = ctx
            .at_key(
                &codes::QA_NEVER_RUN,
                "/qa",
                "the pipeline declares `qa:`, but no route runs it",
            )
            .label("its checks would never run")
            .hint("add a route such as `{ on: build, run: qa }`, or remove `qa:`");
        ctx.emit(d);
    }
    for route in &table.routes {
        if route.action == Action::RunQa {
            let pointer = format!("/routes/{}/run", route.index);
            if table.qa.is_none() {
                let d = ctx
                    .at(
                        &codes::RUN_WITHOUT_QA,
                        &pointer,
                        "route runs QA, but the pipeline has no `qa:` block",
                    )
                    .label("nothing to run")
                    .hint("declare `qa:` with its checks");
                ctx.emit(d);
            } else if !handled(table, QA_RESULT_KIND) {
                let d = ctx
                    .at(
                        &codes::QA_RESULT_UNHANDLED,
                        &pointer,
                        "route runs QA, but no route handles `qa.result`",
                    )
                    .label("the result would go nowhere")
                    .hint("add a route `{ on: qa.result, ... }`, e.g. spawning the verifier");
                ctx.emit(d);
            }
            // One report is enough for several `run: qa` routes.
            break;
        }
    }
}
