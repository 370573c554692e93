//! `crumb check`: a proof over a pipeline's compiled table, not a hope.
//!
//! The explorer drives the real reducer with abstract events ([`world`]): every verdict ×
//! severity a judge can give, turns that fail, QA that passes, fails or cannot run, and a
//! person's `/approve`, `/veto` and `/redo` whenever one is asked. Budgets (`max_verify`,
//! `max_respec`, route `max:`, the circuit breaker, QA retries) bound the space; folded states are
//! hashed (`key`) so each is visited once, and roles the pipeline cannot tell apart are explored
//! as one ([`symmetry`]): a fan-out of n alike judges is a multiset of verdicts, not n-tuples. A
//! search cut off by the state limit says what it could not decide and claims nothing beyond. It reports every terminal outcome reachable (with a
//! shortest path to it), every dead end (nothing can happen and no person is asked), every loop
//! the engine could run forever, the longest path in turns and the worst-case turns per role.
//! Tokens and wall clock are not choices: either can stop any session, so they are not explored.

mod graph;
mod key;
pub mod play;
mod report;
pub mod script;
mod state_hash;
mod symmetry;
pub mod world;

pub use graph::{StepLabel, summarise};
pub use report::{Finding, Reached, Report};

use std::collections::BTreeMap;

use crate::pipeline::table::{Action, TransitionTable};
use graph::Graph;
use symmetry::{Symmetry, rename_text};
use world::World;

/// How far to look.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Most distinct states before the check gives up (and says so: a violation).
    pub max_states: usize,
    /// Whether turns may fail (explores retries and the circuit breaker).
    pub failures: bool,
    /// Whether alike roles are explored as one and severities no route tells apart as one
    /// (off: every renaming and every severity is its own state, what the tests compare the
    /// reduction with).
    pub reduce: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_states: 200_000,
            failures: true,
            reduce: true,
        }
    }
}

/// Explore `table` and report.
pub fn check(table: &TransitionTable, options: Options) -> Report {
    let mut world = World::new(table);
    world.failures = options.failures;
    let symmetry = if options.reduce {
        Symmetry::of(table)
    } else {
        world.severities = crate::vocab::Severity::ALL.to_vec();
        Symmetry::none()
    };
    let graph = graph::build(&world, options.max_states, &symmetry);
    analyse(table, &graph, &symmetry)
}

/// DFS colours.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Colour {
    White,
    Grey,
    Black,
}

/// Longest remaining path from each node (turns, and turns per role), ignoring edges that close
/// a loop; plus the first loop found that no person drives.
struct Longest {
    turns: Vec<u32>,
    /// The edge (index into the node's edges) each node's longest path takes.
    next: Vec<Option<usize>>,
    per_role: Vec<Vec<u32>>,
    engine_loop: Option<(u32, Vec<u32>)>,
    person_loop: bool,
}

fn longest(graph: &Graph, roles: usize) -> Longest {
    let n = graph.nodes.len();
    let mut out = Longest {
        turns: vec![0; n],
        next: vec![None; n],
        per_role: vec![vec![0; roles]; n],
        engine_loop: None,
        person_loop: false,
    };
    if n == 0 {
        return out;
    }
    let mut colour = vec![Colour::White; n];
    // (node, next edge index) — an explicit stack, so a deep graph cannot overflow ours.
    let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
    // The edge labels of the path on the stack, parallel to it (edge taken into stack[i+1]).
    let mut path_edges: Vec<(u32, bool)> = Vec::new();
    colour[0] = Colour::Grey;
    while let Some(&mut (at, ref mut next_edge)) = stack.last_mut() {
        let node = &graph.nodes[at as usize];
        if let Some(edge) = node.edges.get(*next_edge) {
            *next_edge += 1;
            match colour[edge.to as usize] {
                Colour::White => {
                    colour[edge.to as usize] = Colour::Grey;
                    path_edges.push((edge.label, edge.by_person));
                    stack.push((edge.to, 0));
                }
                Colour::Grey => {
                    // A loop: the stack from `edge.to` up to here, closed by this edge.
                    let from = stack
                        .iter()
                        .position(|(node, _)| *node == edge.to)
                        .unwrap_or(0);
                    let mut cycle: Vec<(u32, bool)> = path_edges[from..].to_vec();
                    cycle.push((edge.label, edge.by_person));
                    if cycle.iter().any(|(_, person)| *person) {
                        out.person_loop = true;
                    } else if out.engine_loop.is_none() {
                        out.engine_loop =
                            Some((edge.to, cycle.into_iter().map(|(l, _)| l).collect()));
                    }
                }
                Colour::Black => {}
            }
            continue;
        }
        // All edges done: fold the successors' longest paths (those finished, i.e. not loops).
        let mut best_turns = 0;
        let mut best_edge = None;
        let mut per_role = vec![0; roles];
        for (index, edge) in node.edges.iter().enumerate() {
            let to = edge.to as usize;
            if colour[to] != Colour::Black {
                continue;
            }
            let turn = u32::from(edge.turn_of.is_some());
            if best_edge.is_none() || out.turns[to] + turn > best_turns {
                best_turns = out.turns[to] + turn;
                best_edge = Some(index);
            }
            let moves = &graph.renamings[edge.renaming as usize];
            for (role, slot) in per_role.iter_mut().enumerate() {
                let own = u32::from(edge.turn_of.map(usize::from) == Some(role));
                // The same role at the target, which may know it by a twin's name.
                let there = moves
                    .iter()
                    .find(|(here, _)| usize::from(*here) == role)
                    .map_or(role, |(_, there)| usize::from(*there));
                *slot = (*slot).max(out.per_role[to][there] + own);
            }
        }
        out.turns[at as usize] = best_turns;
        out.next[at as usize] = best_edge;
        out.per_role[at as usize] = per_role;
        colour[at as usize] = Colour::Black;
        stack.pop();
        path_edges.pop();
    }
    out
}

/// Twins start alike, so their worst cases are one: the most any of them was found to take
/// (loops closed by the search make the figure depend on the order it met the states in).
fn twins_share_worst_cases(table: &TransitionTable, symmetry: &Symmetry, longest: &mut Longest) {
    let Some(start) = longest.per_role.first_mut() else {
        return;
    };
    for group in &symmetry.groups {
        let members: Vec<usize> = group
            .iter()
            .filter_map(|r| table.roles.iter().position(|spec| spec.id == *r))
            .collect();
        let worst = members.iter().map(|&i| start[i]).max().unwrap_or(0);
        for i in members {
            start[i] = worst;
        }
    }
}

fn analyse(table: &TransitionTable, graph: &Graph, symmetry: &Symmetry) -> Report {
    let mut longest = longest(graph, table.roles.len());
    twins_share_worst_cases(table, symmetry, &mut longest);
    let mut reached: BTreeMap<(String, String), Reached> = BTreeMap::new();
    let mut findings = Vec::new();
    let mut unexplored = 0usize;
    for (id, node) in graph.nodes.iter().enumerate() {
        let id = u32::try_from(id).unwrap_or(u32::MAX);
        unexplored += usize::from(node.unexplored);
        if let Some((outcome, reason)) = &node.end {
            // An end that names a twin is reached under every renaming of it.
            for (reason, renaming) in symmetry.variants(reason) {
                reached
                    .entry((outcome.as_str().to_owned(), reason.clone()))
                    .or_insert_with(|| Reached {
                        outcome: *outcome,
                        reason,
                        path: graph
                            .path_to(id)
                            .iter()
                            .map(|step| rename_text(step, &renaming))
                            .collect(),
                    });
            }
        }
        if node.dead_end && findings.len() < report::MAX_FINDINGS {
            let message = if node.awaiting {
                "dead end: a person is asked, but nothing they can say (/approve, /veto, /redo) moves the session on"
            } else {
                "dead end: nothing is running, nothing is pending and no person is asked"
            };
            findings.push(Finding {
                code: "dead-end".to_owned(),
                message: message.to_owned(),
                path: graph.path_to(id),
            });
        }
    }
    if let Some((entry, cycle)) = &longest.engine_loop {
        let mut path = graph.path_to(*entry);
        let lines: Vec<String> = cycle
            .iter()
            .map(|l| graph.labels[*l as usize].line())
            .collect();
        path.extend(lines.iter().map(|l| format!("↻ {l}")));
        findings.push(Finding {
            code: "unbounded-loop".to_owned(),
            message: format!(
                "unbounded loop: these {} steps return to the same state, and no budget, route `max:` or person stops them",
                lines.len()
            ),
            path,
        });
    }
    if graph.truncated {
        findings.push(Finding {
            code: "state-limit".to_owned(),
            message: format!(
                "not proven within {} states: {unexplored} explored states have steps past the limit, so \
                 whether those paths end, dead-end or loop is not decided (no dead end is claimed there) \
                 and a declared route not reached yet may still be; raise --max-states",
                graph.nodes.len()
            ),
            path: Vec::new(),
        });
    }
    let mut longest_path = vec![graph.start.line()];
    let mut at = 0u32;
    while let Some(index) = longest.next.get(at as usize).copied().flatten() {
        let edge = graph.nodes[at as usize].edges[index];
        longest_path.push(graph.labels[edge.label as usize].line());
        at = edge.to;
    }
    let declared_unreached = declared_unreached(table, graph, &reached);
    Report {
        pipeline: table.name.clone(),
        states: graph.nodes.len(),
        transitions: graph.nodes.iter().map(|n| n.edges.len()).sum(),
        outcomes: reached.into_values().collect(),
        declared_unreached,
        longest_turns: longest.turns.first().copied().unwrap_or(0),
        longest_path,
        max_turns_per_role: table
            .roles
            .iter()
            .enumerate()
            .map(|(i, role)| {
                (
                    role.id.clone(),
                    longest.per_role.first().map_or(0, |v| v[i]),
                )
            })
            .collect(),
        person_loops: longest.person_loop,
        findings,
    }
}
/// `done:` routes no explored path ends in, and any other route no explored step fires.
fn declared_unreached(
    table: &TransitionTable,
    graph: &Graph,
    reached: &BTreeMap<(String, String), Reached>,
) -> Vec<String> {
    table
        .routes
        .iter()
        .filter_map(|route| {
            let fired = graph.fired.get(route.index).copied().unwrap_or(false);
            match &route.action {
                // Past the state limit, not reached is not decided: the limit finding says so.
                _ if graph.truncated => None,
                Action::Done { outcome, reason }
                    if !reached.contains_key(&(outcome.as_str().to_owned(), reason.clone())) =>
                {
                    Some(format!(
                        "route {}: done {outcome} ({reason})",
                        route.index + 1
                    ))
                }
                _ if !fired => {
                    // The label starts with the route's own `#<index>`; this line numbers it.
                    let label = crate::pipeline::graph::route_label(route);
                    let trigger = label.split_once(' ').map_or(label.as_str(), |(_, t)| t);
                    Some(format!(
                        "route {}: on {trigger} never fires",
                        route.index + 1
                    ))
                }
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod symmetry_tests;
#[cfg(test)]
mod tests;
