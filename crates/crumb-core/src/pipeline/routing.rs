//! Pass 3, routing: every route names real roles, every produced kind is handled, no route is
//! shadowed, every verdict × severity cell is routed, and `goal` can reach a `done`.
//!
//! All of it is computed on the compiled table (the same one the engine runs), with the model
//! only used for locations.

use std::collections::{BTreeSet, HashSet, VecDeque};

use crate::pipeline::authority;
use crate::pipeline::codes;
use crate::pipeline::compile::Ctx;
use crate::pipeline::model::Pipeline;
use crate::pipeline::suggest;
use crate::pipeline::table::{Action, TransitionTable, Trigger};
use crate::transcript::Kind;
use crate::vocab::{RESERVED_ACTORS, Severity, Verdict};

/// The kind a person's pitch arrives as; every run starts with it.
pub const GOAL_KIND: &str = "goal";
/// The kind QA writes when `run: qa` finishes.
pub const QA_RESULT_KIND: &str = "qa.result";
/// The kind whose corrected verdict `on: verdict` routes handle.
pub const JUDGE_SCORE_KIND: &str = "judge.score";

pub(crate) fn check(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    unknown_kinds(pipeline, ctx);
    unknown_roles(pipeline, table, ctx);
    from_cannot_produce(pipeline, table, ctx);
    unhandled_kinds(table, ctx);
    shadowed_routes(table, ctx);
    exhaustiveness(table, ctx);
    never_spawned(table, ctx);
    qa_routes(table, ctx);
    reachability(table, ctx);
}

/// Kinds must be words of the transcript vocabulary: the writer refuses any other, so a route
/// or a `produces` naming one could never be satisfied.
fn unknown_kinds(pipeline: &Pipeline, ctx: &mut Ctx<'_>) {
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
        if route.on != crate::pipeline::compile::VERDICT_TRIGGER {
            named.push((format!("/routes/{i}/on"), route.on.as_str()));
        }
    }
    for (pointer, kind) in named {
        if kind.parse::<Kind>().is_ok() {
            continue;
        }
        let words = Kind::ALL.iter().map(|k| k.as_str());
        let hint = match suggest::closest(kind, words) {
            Some(s) => format!("did you mean `{s}`? `crumb explain <kind>` describes each kind"),
            None => "`crumb explain <kind>` describes the kinds; e.g. spec, build, judge.score, qa.result, note".to_string(),
        };
        let d = ctx
            .at(
                &codes::UNKNOWN_EVENT_KIND,
                &pointer,
                format!("`{kind}` is not an event kind"),
            )
            .label("not in the transcript vocabulary")
            .hint(hint);
        ctx.emit(d);
    }
}

fn role_ids(table: &TransitionTable) -> impl Iterator<Item = &str> {
    table.roles.iter().map(|r| r.id.as_str())
}

fn unknown_roles(pipeline: &Pipeline, table: &TransitionTable, ctx: &mut Ctx<'_>) {
    for (i, route) in pipeline.routes.iter().enumerate() {
        if let Some(role) = &route.spawn
            && !table.is_role(role)
        {
            let d = ctx
                .at(
                    &codes::UNKNOWN_ROLE,
                    &format!("/routes/{i}/spawn"),
                    format!("route spawns unknown role `{role}`"),
                )
                .label("no role with this id")
                .hint(role_hint(role, table));
            ctx.emit(d);
        }
        if let Some(from) = &route.from
            && !table.is_role(from)
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
        if authority::accepts_from_role(&role.produces, kind) {
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

fn role_hint(wrong: &str, table: &TransitionTable) -> String {
    let ids: Vec<&str> = role_ids(table).collect();
    match suggest::closest(wrong, ids.iter().copied()) {
        Some(s) => format!("did you mean `{s}`? roles: {}", ids.join(", ")),
        None => format!("roles: {}", ids.join(", ")),
    }
}

/// Whether some route handles an event of `kind` (`judge.score` is handled by verdict routes).
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
            if !handled(table, kind) {
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

fn shadowed_routes(table: &TransitionTable, ctx: &mut Ctx<'_>) {
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
            let d = ctx
                .at(
                    &codes::UNREACHABLE_ROUTE,
                    &format!("/routes/{j}"),
                    format!("route {j} can never fire"),
                )
                .label(format!(
                    "route {} already matches everything this one does",
                    earlier.index
                ))
                .hint(
                    "first match wins: remove this route, or move it above the one that shadows it",
                );
            ctx.emit(d);
        }
    }
}

fn exhaustiveness(table: &TransitionTable, ctx: &mut Ctx<'_>) {
    // Verdicts only exist when some role produces judge scores.
    let judged = table
        .roles
        .iter()
        .any(|r| r.produces.iter().any(|k| k == JUDGE_SCORE_KIND));
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

fn never_spawned(table: &TransitionTable, ctx: &mut Ctx<'_>) {
    let spawned: HashSet<&str> = table
        .routes
        .iter()
        .filter_map(|r| match &r.action {
            Action::Spawn { role } => Some(role.as_str()),
            _ => None,
        })
        .collect();
    for role in &table.roles {
        if !spawned.contains(role.id.as_str()) {
            let pointer = format!(
                "/roles/{}",
                crate::pipeline::located_yaml::escape_segment(&role.id)
            );
            let d = ctx
                .at_key(
                    &codes::ROLE_NEVER_SPAWNED,
                    &pointer,
                    format!("role `{}` is never spawned", role.id),
                )
                .label("no route spawns this role")
                .hint(format!(
                    "add a route with `spawn: {}`, or remove the role",
                    role.id
                ));
            ctx.emit(d);
        }
    }
}

fn qa_routes(table: &TransitionTable, ctx: &mut Ctx<'_>) {
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

/// An event the engine may see: its kind and, when known, who wrote it.
type Event = (String, Option<String>);

/// Breadth-first over events: `goal` → routes → actions → the events those actions produce.
/// A person can end a session that awaits them, so `await: human` counts as reaching the end.
fn reachability(table: &TransitionTable, ctx: &mut Ctx<'_>) {
    let start: Event = (GOAL_KIND.to_string(), Some("user".to_string()));
    let mut seen: BTreeSet<Event> = BTreeSet::new();
    let mut queue: VecDeque<Event> = VecDeque::from([start]);
    let mut fired: HashSet<usize> = HashSet::new();
    while let Some(event) = queue.pop_front() {
        if !seen.insert(event.clone()) {
            continue;
        }
        let (kind, actor) = &event;
        let routes: Vec<usize> = if kind == JUDGE_SCORE_KIND {
            table
                .routes
                .iter()
                .filter(|r| matches!(r.trigger, Trigger::Verdict { .. }))
                .map(|r| r.index)
                .collect()
        } else {
            table
                .by_kind
                .get(kind)
                .map(|indexes| {
                    indexes
                        .iter()
                        .copied()
                        .filter(|&i| match &table.routes[i].trigger {
                            Trigger::Kind { from: Some(f), .. } => {
                                actor.as_ref().is_none_or(|a| a == f)
                            }
                            _ => true,
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        for index in routes {
            fired.insert(index);
            match &table.routes[index].action {
                Action::Done { .. } | Action::AwaitHuman => return,
                Action::RunQa => queue.push_back((QA_RESULT_KIND.to_string(), None)),
                Action::Spawn { role } => {
                    if let Some(spec) = table.role(role) {
                        for produced in &spec.produces {
                            queue.push_back((produced.clone(), Some(role.clone())));
                        }
                    }
                }
            }
        }
    }
    let pointer = "/routes";
    let hint = if table.by_kind.contains_key(GOAL_KIND) {
        "follow the chain from `goal`: each spawned role's `produces` kinds need routes, and one route must end with `done:`"
    } else {
        "add a first route `{ on: goal, spawn: <first role> }`, and make some route end with `done:`"
    };
    let d = ctx
        .at_key(
            &codes::NO_PATH_TO_DONE,
            pointer,
            "no path from `goal` to any `done`",
        )
        .label(format!(
            "{} of {} route(s) reachable from `goal`, none ends the session",
            fired.len(),
            table.routes.len()
        ))
        .hint(hint);
    ctx.emit(d);
}
