//! Draw a compiled [`TransitionTable`] as Mermaid or DOT: roles, QA, the person and the
//! terminal states as nodes, every route as a labelled edge.
//!
//! Built only from the table, so the picture is exactly what the engine will run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::pipeline::choices::{Combine, JoinMode};
use crate::pipeline::table::{Action, CompiledRoute, TransitionTable, Trigger};
use crate::pipeline::triggers::{GOAL_KIND, JUDGE_SCORE_KIND, QA_RESULT_KIND};
use crate::vocab::{Severity, Verdict};

/// A node of the graph.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Node {
    Goal,
    Role(String),
    Qa,
    /// An event kind nothing in the pipeline produces (written by a person or another process).
    External(String),
    AwaitHuman,
    Done(String),
    /// A join: the branches of a fan-out meet here and one combined verdict leaves.
    Join(String),
}

impl Node {
    /// A readable identifier; [`node_ids`] makes it unique.
    fn base_id(&self) -> String {
        let (prefix, name) = match self {
            Node::Goal => ("goal", ""),
            Node::Role(r) => ("role_", r.as_str()),
            Node::Qa => ("qa", ""),
            Node::External(k) => ("event_", k.as_str()),
            Node::AwaitHuman => ("await_human", ""),
            Node::Done(reason) => ("done_", reason.as_str()),
            Node::Join(label) => ("join_", label.as_str()),
        };
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("{prefix}{safe}")
    }

    fn label(&self) -> String {
        match self {
            Node::Goal => "goal".into(),
            Node::Role(r) => r.clone(),
            Node::Qa => "QA".into(),
            Node::External(k) => k.clone(),
            Node::AwaitHuman => "await human".into(),
            Node::Done(reason) => format!("done: {reason}"),
            Node::Join(label) => format!("join {label}"),
        }
    }
}

/// One labelled edge per route source.
struct Edge {
    from: Node,
    to: Node,
    label: String,
    route: usize,
}

/// The text on a route's edge: `#n trigger[ · feedback]`, routes numbered from 1 as everywhere.
pub(crate) fn route_label(route: &CompiledRoute) -> String {
    let trigger = match &route.trigger {
        Trigger::Kind {
            kind,
            from: Some(from),
        } => format!("{kind} from {from}"),
        Trigger::Kind { kind, from: None } => kind.clone(),
        Trigger::Verdict {
            verdicts,
            severities,
        } => {
            let v = if verdicts.len() == Verdict::ALL.len() {
                "any".to_string()
            } else {
                verdicts
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join("/")
            };
            if severities.len() == Severity::ALL.len() {
                format!("verdict {v}")
            } else {
                let s = severities
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("/");
                format!("verdict {v} × {s}")
            }
        }
    };
    let feedback = if route.with_feedback {
        " · feedback"
    } else {
        ""
    };
    format!("#{} {trigger}{feedback}", route.index + 1)
}

/// Where a route leads: one node, or every branch of a fan-out.
fn targets(action: &Action) -> Vec<Node> {
    match action {
        Action::Spawn { role } => vec![Node::Role(role.clone())],
        Action::SpawnAll { roles } => roles.iter().map(|r| Node::Role(r.clone())).collect(),
        Action::Join { mode, combine } => vec![join_node(*mode, *combine)],
        Action::RunQa => vec![Node::Qa],
        Action::Done { reason, .. } => vec![Node::Done(reason.clone())],
        Action::AwaitHuman => vec![Node::AwaitHuman],
    }
}

fn join_node(mode: JoinMode, combine: Combine) -> Node {
    let word = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => s,
        other => other.to_string().replace(['{', '}', '"'], ""),
    };
    let mode = serde_json::to_value(mode).map(word).unwrap_or_default();
    let combine = serde_json::to_value(combine).map(word).unwrap_or_default();
    Node::Join(format!("{mode} · {combine}"))
}

/// Who can emit events of `kind` (optionally only `from`).
fn sources(table: &TransitionTable, kind: &str, from: Option<&str>) -> Vec<Node> {
    let mut out: Vec<Node> = table
        .roles
        .iter()
        .filter(|r| r.produces.iter().any(|k| k == kind) && from.is_none_or(|f| f == r.id))
        .map(|r| Node::Role(r.id.clone()))
        .collect();
    if kind == GOAL_KIND {
        out.insert(0, Node::Goal);
    }
    let from_qa = [QA_RESULT_KIND, crate::pipeline::triggers::QA_ERROR_TRIGGER];
    if from_qa.contains(&kind) && table.qa.is_some() {
        out.push(Node::Qa);
    }
    if out.is_empty() {
        out.push(Node::External(kind.to_string()));
    }
    out
}

fn edges(table: &TransitionTable) -> Vec<Edge> {
    let mut out = Vec::new();
    for route in &table.routes {
        let from_nodes = match &route.trigger {
            Trigger::Kind { kind, from } => sources(table, kind, from.as_deref()),
            // Only judges whose scores no `on: judge.score` route takes reach the verdicts.
            Trigger::Verdict { .. } => sources(table, JUDGE_SCORE_KIND, None)
                .into_iter()
                .filter(|node| {
                    !matches!(node, Node::Role(role) if table.route_for(JUDGE_SCORE_KIND, role).is_some())
                })
                // A join's combined verdict takes the verdict routes too.
                .chain(table.routes.iter().filter_map(|r| match r.action {
                    Action::Join { mode, combine } => Some(join_node(mode, combine)),
                    _ => None,
                }))
                .collect(),
        };
        for from in from_nodes {
            for to in targets(&route.action) {
                out.push(Edge {
                    from: from.clone(),
                    to,
                    label: route_label(route),
                    route: route.index,
                });
            }
        }
    }
    out
}

/// Every node, in a stable order: goal, roles in declaration order, QA, then the rest.
fn nodes(table: &TransitionTable, edges: &[Edge]) -> Vec<Node> {
    let mut out = vec![Node::Goal];
    out.extend(table.roles.iter().map(|r| Node::Role(r.id.clone())));
    if table.qa.is_some() {
        out.push(Node::Qa);
    }
    let mut rest: BTreeSet<Node> = BTreeSet::new();
    for edge in edges {
        for node in [&edge.from, &edge.to] {
            if !out.contains(node) {
                rest.insert(node.clone());
            }
        }
    }
    out.extend(rest);
    out
}

/// Unique node identifiers: the readable form, suffixed when two names sanitise alike
/// (`a-b` and `a_b`).
fn node_ids(nodes: &[Node]) -> BTreeMap<Node, String> {
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut ids = BTreeMap::new();
    for node in nodes {
        let base = node.base_id();
        let mut id = base.clone();
        let mut n = 2;
        while taken.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(id.clone());
        ids.insert(node.clone(), id);
    }
    ids
}

/// The graph as data: what `crumb graph` prints and what Studio draws, so the two cannot disagree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

/// A node of the graph.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GraphNode {
    /// Unique, readable identifier (`role_builder`, `qa`, `done_verdict_pass`, …).
    pub id: String,
    pub label: String,
    pub shape: NodeShape,
}

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeShape {
    Goal,
    Role,
    Qa,
    /// An event kind nothing in the pipeline produces.
    Event,
    Await,
    Done,
    /// Where a fan-out's branches meet.
    Join,
}

/// A route drawn from one of its sources to its target.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub label: String,
    /// The route's position in the pipeline's `routes` list.
    pub route: usize,
}

/// The compiled table as nodes and labelled edges.
pub fn graph(table: &TransitionTable) -> Graph {
    let edges = edges(table);
    let nodes = nodes(table, &edges);
    let ids = node_ids(&nodes);
    let id = |node: &Node| ids.get(node).cloned().unwrap_or_default();
    Graph {
        nodes: nodes
            .iter()
            .map(|node| GraphNode {
                id: id(node),
                label: node.label(),
                shape: match node {
                    Node::Goal => NodeShape::Goal,
                    Node::Role(_) => NodeShape::Role,
                    Node::Qa => NodeShape::Qa,
                    Node::External(_) => NodeShape::Event,
                    Node::AwaitHuman => NodeShape::Await,
                    Node::Done(_) => NodeShape::Done,
                    Node::Join(_) => NodeShape::Join,
                },
            })
            .collect(),
        edges: edges
            .iter()
            .map(|edge| GraphEdge {
                from: id(&edge.from),
                to: id(&edge.to),
                label: edge.label.clone(),
                route: edge.route,
            })
            .collect(),
    }
}

/// Mermaid `flowchart`.
pub fn mermaid(table: &TransitionTable) -> String {
    let graph = graph(table);
    let mut out = String::from("flowchart TD\n");
    for node in &graph.nodes {
        let label = escape_mermaid(&node.label);
        let shape = match node.shape {
            NodeShape::Goal | NodeShape::Event => format!("([\"{label}\"])"),
            NodeShape::Role => format!("[\"{label}\"]"),
            NodeShape::Qa => format!("{{{{\"{label}\"}}}}"),
            NodeShape::Await => format!("[/\"{label}\"/]"),
            NodeShape::Done => format!("((\"{label}\"))"),
            NodeShape::Join => format!("{{\"{label}\"}}"),
        };
        let _ = writeln!(out, "    {}{shape}", node.id);
    }
    for edge in &graph.edges {
        let _ = writeln!(
            out,
            "    {} -->|\"{}\"| {}",
            edge.from,
            escape_mermaid(&edge.label),
            edge.to
        );
    }
    out
}

/// Graphviz `digraph`.
pub fn dot(table: &TransitionTable) -> String {
    let graph = graph(table);
    let mut out = format!(
        "digraph \"{}\" {{\n    rankdir=TB;\n",
        escape_dot(&table.name)
    );
    for node in &graph.nodes {
        let shape = match node.shape {
            NodeShape::Goal | NodeShape::Event => "oval",
            NodeShape::Role => "box",
            NodeShape::Qa => "hexagon",
            NodeShape::Await => "parallelogram",
            NodeShape::Done => "doublecircle",
            NodeShape::Join => "diamond",
        };
        let _ = writeln!(
            out,
            "    {} [label=\"{}\", shape={shape}];",
            node.id,
            escape_dot(&node.label)
        );
    }
    for edge in &graph.edges {
        let _ = writeln!(
            out,
            "    {} -> {} [label=\"{}\"];",
            edge.from,
            edge.to,
            escape_dot(&edge.label)
        );
    }
    out.push_str("}\n");
    out
}

fn escape_mermaid(text: &str) -> String {
    text.replace('"', "#quot;")
}

fn escape_dot(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}
