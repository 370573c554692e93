//! Pass 3, the route graph: which routes can ever fire, which roles can ever be spawned, whether
//! `goal` can end the session, and whether every loop is bounded.
//!
//! Nodes are routes; an edge leads from a route to each route that fires on an event its action
//! produces (a spawn → the role's `produces`, `run: qa` → `qa.result` and `qa.error`, `judge.score` → the
//! verdict routes). `done` and `await: human` produce nothing a route can loop on, so they end a
//! path. Reachability is a fixpoint over events from `goal` (it never stops at the first `done`),
//! so a role only an unreachable route spawns is reported too.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::pipeline::codes;
use crate::pipeline::located_yaml::escape_segment;
use crate::pipeline::pass_context::Ctx;
use crate::pipeline::table::{Action, TransitionTable, Trigger};
use crate::pipeline::triggers::{GOAL_KIND, JUDGE_SCORE_KIND, QA_RESULT_KIND};
use crate::transcript::Kind;

/// An event the engine may see: its kind and who wrote it (`None`: the runner or a person, so any
/// `from:` may match).
type Event = (String, Option<String>);

/// Kinds the runner, the dispatcher or a person writes on their own (and `note`, which anyone may). They can occur in any
/// session, and nothing in the pipeline makes them happen, so they are never a loop's edge: a
/// person, the circuit breaker and the wall clock bound them.
fn ambient(kind: Kind) -> bool {
    kind.as_str().starts_with("user.")
        || matches!(
            kind,
            Kind::AnswerSocratic
                | Kind::AgentWake
                | Kind::AgentStop
                | Kind::Error
                | Kind::ToolCall
                | Kind::ToolResult
                | Kind::ArtifactCreated
                | Kind::Hook
                | Kind::Audit
                | Kind::Ack
                | Kind::SessionStart
                | Kind::SessionEnd
                | Kind::SessionAwaiting
                | Kind::Done
                | Kind::VersionReleased
                | Kind::Note
        )
}

/// The route graph of a table.
struct Graph<'t> {
    table: &'t TransitionTable,
    /// Routes some event reachable from `goal` fires.
    reachable: BTreeSet<usize>,
    /// Route → the routes that fire on events its action produces.
    edges: Vec<BTreeSet<usize>>,
}

impl<'t> Graph<'t> {
    fn new(table: &'t TransitionTable) -> Self {
        let edges = table
            .routes
            .iter()
            .map(|r| {
                produced(table, &r.action)
                    .iter()
                    .flat_map(|e| fires(table, e))
                    .collect()
            })
            .collect();
        let mut graph = Graph {
            table,
            reachable: BTreeSet::new(),
            edges,
        };
        graph.reach();
        graph
    }

    /// Fixpoint over events from `goal` and the ambient kinds.
    fn reach(&mut self) {
        let mut queue: VecDeque<Event> = VecDeque::from([(GOAL_KIND.into(), Some("user".into()))]);
        queue.extend(
            Kind::ALL
                .iter()
                .filter(|k| ambient(**k))
                .map(|k| (k.as_str().to_owned(), None)),
        );
        let mut seen: BTreeSet<Event> = BTreeSet::new();
        while let Some(event) = queue.pop_front() {
            if !seen.insert(event.clone()) {
                continue;
            }
            for route in fires(self.table, &event) {
                if self.reachable.insert(route) {
                    queue.extend(produced(self.table, &self.table.routes[route].action));
                }
            }
        }
    }

    /// Roles that a reachable route spawns.
    fn spawned(&self) -> BTreeSet<&'t str> {
        self.reachable
            .iter()
            .flat_map(|&i| spawned_roles(&self.table.routes[i].action))
            .collect()
    }

    /// A route that bounds every loop through it: its own `max:`, a verdict route (bounded by
    /// `limits.max_verify`) or a spec route (bounded by `limits.max_respec`).
    fn bounds(&self, index: usize) -> bool {
        let route = &self.table.routes[index];
        route.max.is_some()
            || match &route.trigger {
                Trigger::Verdict { .. } => true,
                Trigger::Kind { kind, .. } => {
                    self.table.slot(kind) == Some(crate::pipeline::kinds::Slot::Plan)
                }
            }
    }

    /// Reachable routes joined by edges among unbounded routes only.
    fn unbounded_successors(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        self.edges[index]
            .iter()
            .copied()
            .filter(|&j| self.reachable.contains(&j) && !self.bounds(j))
    }

    /// Every loop no budget bounds, each as the routes along it (the first one starts it, the
    /// last one closes it). One per strongly connected group, so one cause is one error.
    fn unbounded_loops(&self) -> Vec<Vec<usize>> {
        let mut covered: BTreeSet<usize> = BTreeSet::new();
        let mut loops = Vec::new();
        for &start in &self.reachable {
            if self.bounds(start) || covered.contains(&start) {
                continue;
            }
            let Some(path) = self.path_back(start) else {
                continue;
            };
            covered.extend(self.group_of(start));
            loops.push(path);
        }
        loops
    }

    /// Shortest path of unbounded routes from `start` back to itself.
    fn path_back(&self, start: usize) -> Option<Vec<usize>> {
        let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for next in self.unbounded_successors(at) {
                if next == start {
                    let mut path = vec![at];
                    let mut cursor = at;
                    while cursor != start {
                        cursor = parent[&cursor];
                        path.push(cursor);
                    }
                    path.reverse();
                    return Some(path);
                }
                if let std::collections::btree_map::Entry::Vacant(slot) = parent.entry(next) {
                    slot.insert(at);
                    queue.push_back(next);
                }
            }
        }
        None
    }

    /// Routes on some unbounded loop through `start` (its strongly connected group).
    fn group_of(&self, start: usize) -> BTreeSet<usize> {
        let forward = self.closure(start, |g, i| g.unbounded_successors(i).collect());
        let backward = self.closure(start, |g, i| {
            (0..g.table.routes.len())
                .filter(|&j| g.unbounded_successors(j).any(|k| k == i))
                .collect()
        });
        forward.intersection(&backward).copied().collect()
    }

    fn closure(&self, start: usize, step: impl Fn(&Self, usize) -> Vec<usize>) -> BTreeSet<usize> {
        let mut seen = BTreeSet::from([start]);
        let mut queue = VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for next in step(self, at) {
                if seen.insert(next) {
                    queue.push_back(next);
                }
            }
        }
        seen
    }

    /// `note → looper → note`: trigger kinds and what each route does, around the loop.
    fn describe(&self, path: &[usize]) -> String {
        let mut words = vec![trigger_word(&self.table.routes[path[0]].trigger)];
        for (n, &index) in path.iter().enumerate() {
            let next = path[(n + 1) % path.len()];
            let action = &self.table.routes[index].action;
            words.push(match action {
                Action::Spawn { role } => role.clone(),
                Action::SpawnAll { roles } => roles.join(" + "),
                Action::Join { .. } => "join".into(),
                Action::RunQa => "run qa".into(),
                Action::Done { .. } | Action::AwaitHuman => String::new(),
            });
            let link = produced(self.table, action)
                .into_iter()
                .find(|e| fires(self.table, e).contains(&next))
                .map_or_else(
                    || trigger_word(&self.table.routes[next].trigger),
                    |(kind, _)| kind,
                );
            words.push(link);
        }
        words.join(" → ")
    }
}

fn trigger_word(trigger: &Trigger) -> String {
    match trigger {
        Trigger::Kind { kind, .. } => kind.clone(),
        Trigger::Verdict { .. } => crate::pipeline::triggers::VERDICT_TRIGGER.into(),
    }
}

/// The events a route's action can lead to.
fn produced(table: &TransitionTable, action: &Action) -> Vec<Event> {
    match action {
        Action::Spawn { role } => table.role(role).map_or_else(Vec::new, |spec| {
            spec.produces
                .iter()
                .map(|k| (k.clone(), Some(role.clone())))
                .collect()
        }),
        Action::SpawnAll { roles } => roles
            .iter()
            .flat_map(|role| produced(table, &Action::Spawn { role: role.clone() }))
            .collect(),
        // The combined verdict takes the verdict routes.
        Action::Join { .. } => vec![(crate::pipeline::triggers::VERDICT_TRIGGER.into(), None)],
        Action::RunQa => vec![
            (QA_RESULT_KIND.into(), None),
            (crate::pipeline::triggers::QA_ERROR_TRIGGER.into(), None),
        ],
        Action::Done { .. } | Action::AwaitHuman => Vec::new(),
    }
}

/// The roles an action spawns (one, or every branch of a fan-out).
pub(crate) fn spawned_roles(action: &Action) -> Vec<&str> {
    match action {
        Action::Spawn { role } => vec![role.as_str()],
        Action::SpawnAll { roles } => roles.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The routes an event can fire, as the engine picks them (first match wins).
fn fires(table: &TransitionTable, (kind, from): &Event) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    if kind == crate::pipeline::triggers::VERDICT_TRIGGER {
        out.extend(table.verdict_matrix.iter().flatten().flatten().copied());
        return out;
    }
    let mut decided = false;
    let candidates = table.by_kind.get(kind.as_str()).or_else(|| {
        // A plan kind without its own route takes the first plan kind's route, as in the engine.
        (table.slot(kind) == Some(crate::pipeline::kinds::Slot::Plan))
            .then(|| {
                table
                    .kinds
                    .iter()
                    .filter(|(k, s)| *s == crate::pipeline::kinds::Slot::Plan && k != kind)
                    .find_map(|(k, _)| table.by_kind.get(k.as_str()))
            })
            .flatten()
    });
    for &index in candidates.into_iter().flatten() {
        let Trigger::Kind { from: wanted, .. } = &table.routes[index].trigger else {
            continue;
        };
        match (wanted, from) {
            (None, _) => {
                out.insert(index);
                decided = true;
                break;
            }
            (Some(w), Some(f)) if w == f => {
                out.insert(index);
                decided = true;
                break;
            }
            // Written by the runner or a person: some actor may match this filter.
            (Some(_), None) => {
                out.insert(index);
            }
            (Some(_), Some(_)) => {}
        }
    }
    // A `judge.score` no kind route surely takes: its corrected verdict can land in any cell.
    if kind == JUDGE_SCORE_KIND && !decided {
        out.extend(table.verdict_matrix.iter().flatten().flatten().copied());
    }
    out
}

/// Run the graph checks. `incomplete` says an earlier check already reported a broken route
/// (an unknown role or kind, a route without one action): what follows from that one cause —
/// no path to `done`, roles or routes that look unreachable — is not reported again.
pub(crate) fn check(
    table: &TransitionTable,
    shadowed: &BTreeSet<usize>,
    incomplete: bool,
    ctx: &mut Ctx<'_>,
) {
    let graph = Graph::new(table);
    for path in graph.unbounded_loops() {
        let closing = path[path.len() - 1];
        let d = ctx
            .at(
                &codes::UNBOUNDED_LOOP,
                &format!("/routes/{closing}"),
                format!("unbounded loop: {}", graph.describe(&path)),
            )
            .label("closes a loop that nothing bounds")
            .hint(format!(
                "add `max: <n>` to a route of the loop (past it the session stops with `route_budget:{}`), or route it through a verdict or `await: human`",
                closing + 1
            ));
        ctx.emit(d);
    }
    if incomplete {
        return;
    }
    let ends = graph.reachable.iter().any(|&i| {
        matches!(
            table.routes[i].action,
            Action::Done { .. } | Action::AwaitHuman
        )
    });
    if !ends {
        no_path_to_done(table, graph.reachable.len(), ctx);
        // Everything below would only repeat this one cause.
        return;
    }
    let spawned = graph.spawned();
    for role in &table.roles {
        if spawned.contains(role.id.as_str()) {
            continue;
        }
        let anywhere = table
            .routes
            .iter()
            .any(|r| spawned_roles(&r.action).contains(&role.id.as_str()));
        let label = if anywhere {
            "only routes that can never fire spawn it"
        } else {
            "no route spawns this role"
        };
        let d = ctx
            .at_key(
                &codes::ROLE_NEVER_SPAWNED,
                &format!("/roles/{}", escape_segment(&role.id)),
                format!("role `{}` is never spawned", role.id),
            )
            .label(label)
            .hint(format!(
                "route an event that can happen to `spawn: {}`, or remove the role",
                role.id
            ));
        ctx.emit(d);
    }
    for route in &table.routes {
        if graph.reachable.contains(&route.index) || shadowed.contains(&route.index) {
            continue;
        }
        let what = match &route.trigger {
            Trigger::Kind { kind, .. } => format!("`{kind}`"),
            Trigger::Verdict { .. } => format!("`{JUDGE_SCORE_KIND}`"),
        };
        let d = ctx
            .at(
                &codes::UNREACHABLE_ROUTE,
                &format!("/routes/{}", route.index),
                format!("route {} can never fire", route.index + 1),
            )
            .label(format!("nothing reachable from `goal` writes {what}"))
            .hint("add the kind to the `produces` of a role that is spawned, or remove the route");
        ctx.emit(d);
    }
}

fn no_path_to_done(table: &TransitionTable, reachable: usize, ctx: &mut Ctx<'_>) {
    let hint = if table.by_kind.contains_key(GOAL_KIND) {
        "follow the chain from `goal`: each spawned role's `produces` kinds need routes, and one route must end with `done:`"
    } else {
        "add a first route `{ on: goal, spawn: <first role> }`, and make some route end with `done:`"
    };
    let d = ctx
        .at_key(
            &codes::NO_PATH_TO_DONE,
            "/routes",
            "no path from `goal` to any `done`",
        )
        .label(format!(
            "{reachable} of {} route(s) reachable from `goal`, none ends the session",
            table.routes.len()
        ))
        .hint(hint);
    ctx.emit(d);
}
