//! `/mcp`: recall's MCP tools over streamable HTTP (recall-mcp's endpoint), behind the same
//! bearer API keys as `/v1`. The authenticated tenant is handed to the endpoint with each
//! request, so a tool call reads and writes only that tenant's conversations and tasks.

use axum::body::Body;
use axum::extract::{Extension, Request};
use axum::routing::{any, MethodRouter};
use recall_mcp::streamable_http::{HttpOptions, McpHttp};

use crate::auth::Tenant;
use crate::body::read_body;
use crate::error::ApiError;
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
            async move {
                // The whole body is read first (within the limit, as for /v1): an answer
                // given before the body is read (the Host check's 403) makes the server
                // close the connection under a client that may still be sending, which
                // that client sees as a broken connection instead of the answer.
                let (parts, body) = req.into_parts();
                let bytes = read_body(Request::from_parts(parts.clone(), body), &()).await?;
                let req = Request::from_parts(parts, Body::from(bytes));
                Ok::<_, ApiError>(endpoint.handle(&tenant, req).await.map(Body::new))
            }
        },
    )
}
