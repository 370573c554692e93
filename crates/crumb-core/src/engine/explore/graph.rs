//! The state graph of a pipeline: every point the world's choices can reach from the goal,
//! discovered breadth first (so the path kept to each point is a shortest one), each visited once.

use std::collections::{HashMap, VecDeque};

use super::key::{key, rules};
use super::symmetry::Symmetry;
use super::world::{Choice, Point, World};
use crate::engine::effect::Effect;
use crate::vocab::Outcome;

/// One step of a path: the choice made and what the engine did about it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StepLabel {
    pub choice: String,
    /// The effects that start something or end the session, e.g. `spawn builder`, `run qa`,
    /// `done fail (pass_without_qa)`, `await person`.
    pub then: Vec<String>,
}

impl StepLabel {
    /// `choice → then, then`.
    pub fn line(&self) -> String {
        if self.then.is_empty() {
            self.choice.clone()
        } else {
            format!("{} → {}", self.choice, self.then.join(", "))
        }
    }
}

/// An edge of the graph.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edge {
    pub to: u32,
    pub label: u32,
    /// The role whose turn this step ended, as an index into the table's roles.
    pub(crate) turn_of: Option<u16>,
    pub(crate) by_person: bool,
    /// Which role of this node is which of `to` (an index into [`Graph::renamings`]): twins
    /// renamed on the way, so each role's worst case follows the same role.
    pub(crate) renaming: u32,
}

/// One point of the graph (its state is dropped once expanded).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// The node it was first reached from and the step that reached it (none for the start).
    pub parent: Option<(u32, u32)>,
    pub end: Option<(Outcome, String)>,
    /// Not ended, nothing pending, and no choice moves it on.
    pub(crate) dead_end: bool,
    /// Some step from here led to a state past the limit: not a dead end, not decided.
    pub(crate) unexplored: bool,
    /// Waiting for a person when it became a dead end.
    pub awaiting: bool,
    pub edges: Vec<Edge>,
}

/// The explored graph.
pub(super) struct Graph {
    pub nodes: Vec<Node>,
    pub labels: Vec<StepLabel>,
    /// The exploration stopped at the state limit: what is below is incomplete.
    pub truncated: bool,
    /// The steps of the start (the goal's route).
    pub start: StepLabel,
    /// Per route of the table: whether some explored step fired it.
    pub fired: Vec<bool>,
    /// Role permutations of edges, as `(role, role in the target)` index pairs that move;
    /// the first is the identity.
    pub(crate) renamings: Vec<Vec<(u16, u16)>>,
}

impl Graph {
    /// The steps from the start to `node`.
    pub(crate) fn path_to(&self, node: u32) -> Vec<String> {
        let mut steps = Vec::new();
        let mut at = node;
        while let Some((parent, label)) = self.nodes[at as usize].parent {
            steps.push(self.labels[label as usize].line());
            at = parent;
        }
        steps.push(self.start.line());
        steps.reverse();
        steps
    }
}

/// What the engine did, as a short list for a path.
pub fn summarise(effects: &[Effect], awaiting_before: bool, awaiting_after: bool) -> Vec<String> {
    let mut then: Vec<String> = effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Spawn(spawn) => Some(format!("spawn {}", spawn.role)),
            Effect::RunQa(_) => Some("run qa".to_owned()),
            Effect::Done(done) => Some(format!("done {} ({})", done.outcome, done.reason)),
            Effect::Cancel(_) | Effect::Append(_) => None,
        })
        .collect();
    if awaiting_after && !awaiting_before {
        then.push("await person".to_owned());
    }
    then
}

/// Explore every point reachable from the goal, up to `max_states` points, one per renaming of
/// the twins in `symmetry`.
pub(super) fn build(world: &World<'_>, max_states: usize, symmetry: &Symmetry) -> Graph {
    let (start_point, start_effects) = world.start("(goal)", serde_json::Map::new());
    let start = StepLabel {
        choice: "goal".to_owned(),
        then: summarise(&start_effects, false, start_point.state.awaiting.is_some()),
    };
    let mut graph = Graph {
        nodes: Vec::new(),
        labels: Vec::new(),
        truncated: false,
        start,
        fired: vec![false; world.table.routes.len()],
        renamings: vec![Vec::new()],
    };
    note_fired(&mut graph.fired, world);
    let mut label_ids: HashMap<String, u32> = HashMap::new();
    let mut seen: HashMap<u64, u32> = HashMap::new();
    let mut renaming_ids: HashMap<Vec<(u16, u16)>, u32> = HashMap::from([(Vec::new(), 0)]);
    // Each node's renaming to the canonical names (its point's, the one expanded).
    let mut frames: Vec<Vec<(String, String)>> = Vec::new();
    let mut queue: VecDeque<(u32, Point)> = VecDeque::new();
    let (start_key, start_frame) = key(&start_point, symmetry);
    seen.insert(start_key, 0);
    frames.push(start_frame);
    graph.nodes.push(new_node(&start_point, None));
    queue.push_back((0, start_point));
    let roles: Vec<&str> = world.table.roles.iter().map(|r| r.id.as_str()).collect();

    while let Some((at, point)) = queue.pop_front() {
        if graph.nodes[at as usize].end.is_some() {
            continue;
        }
        let (here, _) = key(&point, symmetry);
        let mut edges = Vec::new();
        let mut unexplored = false;
        for choice in representative_choices(world, &point, symmetry) {
            let mut next = point.clone();
            let awaiting_before = next.state.awaiting.is_some();
            let effects = world.step(&mut next, &choice);
            note_fired(&mut graph.fired, world);
            let (next_key, next_frame) = key(&next, symmetry);
            if next_key == here {
                // Refused or without effect (an /approve nothing awaits): not a step.
                continue;
            }
            let label = intern(
                &mut graph.labels,
                &mut label_ids,
                StepLabel {
                    choice: choice.describe_in(&next.state),
                    then: summarise(&effects, awaiting_before, next.state.awaiting.is_some()),
                },
            );
            let to = if let Some(&known) = seen.get(&next_key) {
                known
            } else {
                if graph.nodes.len() >= max_states {
                    graph.truncated = true;
                    unexplored = true;
                    continue;
                }
                let id = u32::try_from(graph.nodes.len()).unwrap_or(u32::MAX);
                seen.insert(next_key, id);
                frames.push(next_frame.clone());
                graph.nodes.push(new_node(&next, Some((at, label))));
                queue.push_back((id, next));
                id
            };
            let moves = moves(&roles, &next_frame, &frames[to as usize]);
            let renaming = *renaming_ids.entry(moves).or_insert_with_key(|moves| {
                graph.renamings.push(moves.clone());
                u32::try_from(graph.renamings.len() - 1).unwrap_or(u32::MAX)
            });
            edges.push(Edge {
                to,
                label,
                turn_of: turn_index(&roles, &choice),
                by_person: choice.by_person(),
                renaming,
            });
        }
        let node = &mut graph.nodes[at as usize];
        node.dead_end = edges.is_empty() && node.end.is_none() && !unexplored;
        node.unexplored = unexplored;
        node.awaiting = point.state.awaiting.is_some();
        node.edges = edges;
    }
    graph
}

/// The choices at `point`, of twins whose records are equal only the first's: the others lead
/// to renamings of the same states.
fn representative_choices(world: &World<'_>, point: &Point, symmetry: &Symmetry) -> Vec<Choice> {
    let choices = world.choices(point);
    if symmetry.is_trivial() {
        return choices;
    }
    let rules = rules(&[]);
    let mut offered: Vec<(usize, u64, String)> = Vec::new();
    choices
        .into_iter()
        .filter(|choice| {
            let Some(role) = choice.turn_of() else {
                return true;
            };
            let Some(group) = symmetry.group_of(role) else {
                return true;
            };
            let signature = Symmetry::signature(point, role, rules);
            if let Some((_, _, first)) = offered
                .iter()
                .find(|(g, s, _)| *g == group && *s == signature)
            {
                return first == role;
            }
            offered.push((group, signature, role.to_owned()));
            true
        })
        .collect()
}

/// Mark the routes `world` fired since it was last asked.
fn note_fired(fired: &mut [bool], world: &World<'_>) {
    for index in world.take_fired() {
        if let Some(slot) = fired.get_mut(index) {
            *slot = true;
        }
    }
}

fn new_node(point: &Point, parent: Option<(u32, u32)>) -> Node {
    Node {
        parent,
        end: point.state.done.as_ref().map(|done| {
            (
                done.outcome.unwrap_or(Outcome::Stopped),
                done.reason.clone(),
            )
        }),
        dead_end: false,
        unexplored: false,
        awaiting: false,
        edges: Vec::new(),
    }
}

/// Which role of a point is which of the node it was found to be: a point renamed by `here`
/// and the node's own point renamed by `there` are one canonical state, so a role `r` here is
/// `there⁻¹(here(r))` there. Only the roles that move are listed.
fn moves(roles: &[&str], here: &[(String, String)], there: &[(String, String)]) -> Vec<(u16, u16)> {
    let index = |name: &str| {
        roles
            .iter()
            .position(|r| *r == name)
            .and_then(|i| u16::try_from(i).ok())
    };
    let mut moves: Vec<(u16, u16)> = here
        .iter()
        .map(|(from, _)| from.as_str())
        .chain(there.iter().map(|(_, to)| to.as_str()))
        .filter_map(|role| {
            let canonical = here
                .iter()
                .find(|(from, _)| from == role)
                .map_or(role, |(_, to)| to.as_str());
            let theirs = there
                .iter()
                .find(|(_, to)| to == canonical)
                .map_or(canonical, |(from, _)| from.as_str());
            if role == theirs {
                return None;
            }
            Some((index(role)?, index(theirs)?))
        })
        .collect();
    moves.sort_unstable();
    moves.dedup();
    moves
}

fn turn_index(roles: &[&str], choice: &Choice) -> Option<u16> {
    let role = choice.turn_of()?;
    roles
        .iter()
        .position(|r| *r == role)
        .and_then(|i| u16::try_from(i).ok())
}

fn intern(labels: &mut Vec<StepLabel>, ids: &mut HashMap<String, u32>, label: StepLabel) -> u32 {
    let text = label.line();
    if let Some(&id) = ids.get(&text) {
        return id;
    }
    let id = u32::try_from(labels.len()).unwrap_or(u32::MAX);
    labels.push(label);
    ids.insert(text, id);
    id
}
