//! The pipeline graph Studio draws: the same [`pipeline_graph::graph`] that `crumb graph` prints,
//! so the two can never disagree, plus how often each edge was taken and where the session is now.

use serde::Serialize;

use super::watched_session::{Inner, role_node, safe_id};
use crate::pipeline::graph as pipeline_graph;

/// An edge of the drawn graph: a route of the compiled table plus how often it was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GraphEdge {
    #[serde(flatten)]
    pub edge: pipeline_graph::GraphEdge,
    /// Times this edge was taken in the session.
    pub count: u64,
}

/// The graph with the session's live position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub(crate) struct GraphView {
    pub nodes: Vec<pipeline_graph::GraphNode>,
    pub edges: Vec<GraphEdge>,
    /// The node the session is at: the role that runs next, the person it awaits, or its end.
    pub current: Option<String>,
    /// An end the pipeline does not draw (the engine stopped it: a budget, the circuit breaker,
    /// idleness), drawn as one more node so the graph shows where the run ended.
    pub stop: Option<StopNode>,
}

/// The engine's stop, as a node of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct StopNode {
    pub id: String,
    /// The reason in words.
    pub label: String,
    /// The reason code (shown on hover).
    pub code: String,
    /// The node the run stopped at (the edge into the stop comes from it).
    pub from: Option<String>,
}

/// The session's graph: the compiled table's edges with counts and the live position.
pub(crate) fn view(inner: &Inner) -> Option<GraphView> {
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
    } else if let Some(turn) = &inner.live_turn {
        Some(role_node(&turn.role))
    } else if qa_pending(state) && nodes.iter().any(|n| n.id == "qa") {
        // A build with no QA result after it and no live turn: QA is running.
        Some("qa".to_owned())
    } else if let Some(role) = &state.next_role {
        Some(role_node(role))
    } else {
        state.last_event.as_ref().map(|e| role_node(&e.from))
    };
    let mut current = current.filter(|id| nodes.iter().any(|n| &n.id == id));
    let mut stop = None;
    if let Some(done) = &state.done
        && current.is_none()
    {
        let role = done
            .reason
            .strip_prefix("circuit_open:")
            .or(state.next_role.as_deref())
            .or(state.last_event.as_ref().map(|e| e.from.as_str()));
        let from = role
            .map(role_node)
            .filter(|id| nodes.iter().any(|n| &n.id == id));
        let limits = inner.table.as_ref().map(|t| &t.limits);
        stop = Some(StopNode {
            id: "engine_stop".to_owned(),
            label: super::outcome::reason_words(state, &done.reason, limits),
            code: done.reason.clone(),
            from,
        });
        current = Some("engine_stop".to_owned());
    }
    Some(GraphView {
        nodes,
        edges,
        current,
        stop,
    })
}

/// Whether the latest build has no QA result after it (event ids grow in file order).
fn qa_pending(state: &crate::engine::state::State) -> bool {
    match (&state.build, &state.qa) {
        (Some(build), Some(qa)) => build.event_id > qa.event_id,
        (Some(_), None) => true,
        _ => false,
    }
}
