//! `crumb mcp`: a Model Context Protocol server over stdio (the official Rust SDK, `rmcp`), so a
//! person can drive crumb from inside Claude Code, Codex or Gemini CLI. Tools ([`tools`]) run the
//! same commands a person would; resources ([`resources`]) are each session's summary and
//! transcript, with change notifications while it runs. Everything is scoped ([`scope`]) to the
//! crumb home and project the server was started for.

mod resources;
mod scope;
mod tools;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool_handler};

use crate::home::{CrumbHome, Project};
pub(crate) use scope::Scope;

/// The server: its scope and its tools.
#[derive(Debug, Clone)]
pub(crate) struct CrumbMcp {
    scope: Scope,
    tool_router: ToolRouter<CrumbMcp>,
}

impl CrumbMcp {
    fn new(scope: Scope) -> Self {
        CrumbMcp {
            scope,
            tool_router: tools::router(),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CrumbMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
        .with_server_info(Implementation::new("crumb", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "crumb runs declarative agent pipelines. This server serves the project {} on the \
             crumb home {}: `run` starts a session in the background, `status` and the session \
             resources follow it, `say` answers it (`/approve`, `/veto <reason>`, …).",
            self.scope.project.root.display(),
            self.scope.home.root().display()
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resources::list(&self.scope))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&self.scope, &request.uri)
            .await
            .map(Into::into)
            .map_err(|message| ErrorData::resource_not_found(message, None))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        accepted.resource_subscriptions = accepted.resource_subscriptions.map(|uris| {
            uris.into_iter()
                .filter(|uri| resources::SessionResource::parse(uri).is_some())
                .collect()
        });
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        resources::follow(&self.scope, &context).await;
        Ok(())
    }
}

/// Serve MCP on stdin/stdout until the host closes the connection.
pub(crate) fn serve(home: CrumbHome, project: Project) -> Result<(), String> {
    let scope = Scope::new(home, project)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let service = CrumbMcp::new(scope)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("the MCP handshake failed: {e}"))?;
        service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP server stopped: {e}"))
    })
}
