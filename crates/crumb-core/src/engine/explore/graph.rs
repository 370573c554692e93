//! The state graph of a pipeline: every point the world's choices can reach from the goal,
//! discovered breadth first (so the path kept to each point is a shortest one), each visited once.

use std::collections::{HashMap, VecDeque};

use super::key::key;
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
}

/// One point of the graph (its state is dropped once expanded).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// The node it was first reached from and the step that reached it (none for the start).
    pub parent: Option<(u32, u32)>,
    pub end: Option<(Outcome, String)>,
    /// Not ended, nothing pending, and no choice moves it on.
    pub(crate) dead_end: bool,
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

/// Explore every point reachable from the goal, up to `max_states` points.
pub(super) fn build(world: &World<'_>, max_states: usize) -> Graph {
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
    };
    note_fired(&mut graph.fired, world);
    let mut label_ids: HashMap<String, u32> = HashMap::new();
    let mut seen: HashMap<u64, u32> = HashMap::new();
    let mut queue: VecDeque<(u32, Point)> = VecDeque::new();
    seen.insert(key(&start_point), 0);
    graph.nodes.push(new_node(&start_point, None));
    queue.push_back((0, start_point));
    let roles: Vec<&str> = world.table.roles.iter().map(|r| r.id.as_str()).collect();

    while let Some((at, point)) = queue.pop_front() {
        if graph.nodes[at as usize].end.is_some() {
            continue;
        }
        let here = key(&point);
        let mut edges = Vec::new();
        for choice in world.choices(&point) {
            let mut next = point.clone();
            let awaiting_before = next.state.awaiting.is_some();
            let effects = world.step(&mut next, &choice);
            note_fired(&mut graph.fired, world);
            let next_key = key(&next);
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
                    continue;
                }
                let id = u32::try_from(graph.nodes.len()).unwrap_or(u32::MAX);
                seen.insert(next_key, id);
                graph.nodes.push(new_node(&next, Some((at, label))));
                queue.push_back((id, next));
                id
            };
            edges.push(Edge {
                to,
                label,
                turn_of: turn_index(&roles, &choice),
                by_person: choice.by_person(),
            });
        }
        let node = &mut graph.nodes[at as usize];
        node.dead_end = edges.is_empty() && node.end.is_none();
        node.awaiting = point.state.awaiting.is_some();
        node.edges = edges;
    }
    graph
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
        awaiting: false,
        edges: Vec::new(),
    }
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
