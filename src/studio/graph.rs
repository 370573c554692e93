//! The pipeline graph Studio draws: the same [`pipeline_graph::graph`] that `crumb graph` prints,
//! so the two can never disagree, plus how often each edge was taken and where the session is now.

use serde::Serialize;

use super::hub::{Inner, role_node, safe_id};
use crate::pipeline::graph as pipeline_graph;

/// An edge of the drawn graph: a route of the compiled table plus how often it was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphEdge {
    #[serde(flatten)]
    pub edge: pipeline_graph::GraphEdge,
    /// Times this edge was taken in the session.
    pub count: u64,
}

/// The graph with the session's live position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct GraphView {
    pub nodes: Vec<pipeline_graph::GraphNode>,
    pub edges: Vec<GraphEdge>,
    /// The node the session is at: the role that runs next, the person it awaits, or its end.
    pub current: Option<String>,
}

/// The session's graph: the compiled table's edges with counts and the live position.
pub fn view(inner: &Inner) -> Option<GraphView> {
    let table = inner.table.as_ref()?;
    let pipeline_graph::Graph { nodes, edges } = pipeline_graph::graph(table);
    let edges = edges
        .into_iter()
        .map(|edge| GraphEdge {
            count: inner
                .route_counts
                .get(&(edge.route, edge.from.clone()))
                .copied()
                .unwrap_or(0),
            edge,
        })
        .collect();
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
