//! `/mcp`: recall's MCP tools over streamable HTTP (recall-mcp's endpoint), behind the same
//! bearer API keys as `/v1`. The authenticated tenant is handed to the endpoint with each
//! request, so a tool call reads and writes only that tenant's conversations and tasks.

use axum::body::Body;
use axum::extract::{Extension, Request};
use axum::routing::{any, MethodRouter};
use recall_mcp::streamable_http::{HttpOptions, McpHttp};

use crate::auth::Tenant;
use crate::AppState;

/// The `/mcp` route; it must sit behind [`crate::auth::authenticate`], which sets the tenant.
pub(crate) fn route(state: &AppState) -> MethodRouter<AppState> {
    let config = &state.inner.config;
    let endpoint = McpHttp::new(
        state.engine().clone(),
        HttpOptions {
            max_body_bytes: config.limits.max_body_bytes,
            // Without keys (loopback only), refuse foreign Host names: DNS rebinding.
            loopback_hosts_only: config.no_auth,
        },
    );
    any(
        move |Extension(Tenant(tenant)): Extension<Tenant>, req: Request| {
            let endpoint = endpoint.clone();
            async move { endpoint.handle(&tenant, req).await.map(Body::new) }
        },
    )
}
