//! The pipeline graph Studio draws, taken from `crumb graph`'s own Mermaid output so the two
//! can never disagree, plus how often each edge was taken and where the session is now.

use serde::Serialize;

use super::hub::{Inner, role_node, safe_id};
use crate::pipeline::graph::mermaid;

/// A node of the drawn graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphNode {
    pub id: String,
    pub label: String,
    /// `goal`, `role`, `qa`, `event`, `await` or `done`.
    pub shape: &'static str,
}

/// An edge of the drawn graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub label: String,
    /// The route's position in the pipeline's `routes` list.
    pub route: Option<usize>,
    /// Times this edge was taken in the session.
    pub count: u64,
}

/// The graph with the session's live position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct GraphView {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
    /// The node the session is at: the role that runs next, the person it awaits, or its end.
    pub current: Option<String>,
}

/// Parse `crumb graph`'s Mermaid flowchart into nodes and edges. Unknown lines are ignored.
pub fn parse_mermaid(text: &str) -> (Vec<GraphNode>, Vec<GraphEdge>) {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("flowchart") {
            continue;
        }
        if let Some((from, rest)) = line.split_once(" -->|\"") {
            let Some((label, to)) = rest.rsplit_once("\"| ") else {
                continue;
            };
            let label = unescape(label);
            let route = label
                .strip_prefix('#')
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse().ok());
            edges.push(GraphEdge {
                from: from.trim().to_owned(),
                to: to.trim().to_owned(),
                label,
                route,
                count: 0,
            });
            continue;
        }
        let Some(split) = line.find(['(', '[', '{']) else {
            continue;
        };
        let (id, shape_text) = line.split_at(split);
        let shape = if shape_text.starts_with("((") {
            "done"
        } else if shape_text.starts_with("([") {
            if id == "goal" { "goal" } else { "event" }
        } else if shape_text.starts_with("{{") {
            "qa"
        } else if shape_text.starts_with("[/") {
            "await"
        } else {
            "role"
        };
        let label = match (shape_text.find('"'), shape_text.rfind('"')) {
            (Some(a), Some(b)) if b > a => unescape(&shape_text[a + 1..b]),
            _ => id.to_owned(),
        };
        nodes.push(GraphNode {
            id: id.to_owned(),
            label,
            shape,
        });
    }
    (nodes, edges)
}

fn unescape(text: &str) -> String {
    text.replace("#quot;", "\"")
}

/// The session's graph: the compiled table's edges with counts and the live position.
pub fn view(inner: &Inner) -> Option<GraphView> {
    let table = inner.table.as_ref()?;
    let (nodes, mut edges) = parse_mermaid(&mermaid(table));
    for edge in &mut edges {
        if let Some(route) = edge.route {
            edge.count = inner
                .route_counts
                .get(&(route, edge.from.clone()))
                .copied()
                .unwrap_or(0);
        }
    }
    let state = &inner.replay.state;
    // A session ended by a person or a limit has no `done` node of its own: no position then.
    let current = if let Some(done) = &state.done {
        Some(format!("done_{}", safe_id(&done.reason)))
    } else if state.awaiting.is_some() {
        Some("await_human".to_owned())
    } else if let Some(role) = &state.next_role {
        Some(role_node(role))
    } else {
        state.last_event.as_ref().map(|e| role_node(&e.from))
    };
    let current = current.filter(|id| nodes.iter().any(|n| &n.id == id));
    Some(GraphView {
        nodes,
        edges,
        current,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_shape_and_edge_label() {
        let text = "flowchart TD\n    goal([\"goal\"])\n    role_builder[\"builder\"]\n    qa{{\"QA\"}}\n    await_human[/\"await human\"/]\n    done_verdict_pass((\"done: verdict_pass\"))\n    goal -->|\"#0 goal\"| role_builder\n    role_builder -->|\"#3 verdict PASS × a #quot;b#quot;\"| done_verdict_pass\n";
        let (nodes, edges) = parse_mermaid(text);
        let shapes: Vec<_> = nodes.iter().map(|n| n.shape).collect();
        assert_eq!(shapes, ["goal", "role", "qa", "await", "done"]);
        assert_eq!(edges.len(), 2);
        assert_eq!(edges[1].route, Some(3));
        assert_eq!(edges[1].label, "#3 verdict PASS × a \"b\"");
        assert_eq!(edges[1].to, "done_verdict_pass");
    }

    #[test]
    fn garbage_is_ignored() {
        let (nodes, edges) = parse_mermaid("flowchart TD\n -->|\"\n[[[\n\"\"\"| \n");
        assert!(edges.is_empty());
        assert!(nodes.iter().all(|n| !n.id.contains('\n')));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::parse_mermaid;

    proptest! {
        #[test]
        fn any_text_parses_without_panicking(text in "\\PC{0,300}") {
            let (nodes, edges) = parse_mermaid(&text);
            for node in nodes {
                prop_assert!(!node.id.contains('\n'));
            }
            for edge in edges {
                prop_assert!(!edge.from.contains('\n'));
            }
        }
    }
}
