//! `/mcp`: recall's MCP tools over streamable HTTP (recall-mcp's endpoint), behind the same
//! bearer API keys as `/v1`. The authenticated tenant is handed to the endpoint with each
//! request, so a tool call reads and writes only that tenant's conversations and tasks.
//!
//! The server's own layers check what they check for every route: the Host and Origin
//! headers under `--no-auth` ([`crate::guard`]), `Content-Type: application/json`, the body
//! size. A body that is not JSON at all is answered here, as JSON-RPC asks: 400 with a
//! `-32700` parse error; JSON that is not a JSON-RPC message is 400 with `-32600`.
//!
//! rmcp's own Host check is off (`loopback_hosts_only: false`): under `--no-auth` the server's
//! loopback-`Host` check stands in for it on every route, so there is one check, not two.

use axum::body::Body;
use axum::extract::{Extension, Request};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, MethodRouter};
use recall_mcp::streamable_http::{HttpOptions, McpHttp};
use serde_json::json;

use crate::auth::Tenant;
use crate::body::read_body;
use crate::error::ApiError;
use crate::state::AppState;

/// Longest part of rmcp's explanation quoted in an invalid-request answer.
const MAX_DETAIL: usize = 300;

/// The `/mcp` route; it must sit behind [`crate::auth::authenticate`], which sets the tenant.
pub(crate) fn route(state: &AppState) -> MethodRouter<AppState> {
    let config = &state.inner.config;
    let endpoint = McpHttp::new(
        state.engine().clone(),
        HttpOptions {
            max_body_bytes: config.limits.max_body_bytes,
            // The Host check is the server's, on every route (one check, not two).
            loopback_hosts_only: false,
        },
    )
    .with_backend(state.inner.upstreams.backends.default_backend());
    any(
        move |Extension(Tenant(tenant)): Extension<Tenant>, req: Request| {
            let endpoint = endpoint.clone();
            async move {
                // The whole body is read first (within the limit, as for /v1), to check its
                // syntax before the MCP layer sees it.
                let (parts, body) = req.into_parts();
                let bytes = read_body(Request::from_parts(parts.clone(), body), &()).await?;
                let post = parts.method == Method::POST;
                if post {
                    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
                        return Ok(rpc_error(-32700, format!("Parse error: {e}")));
                    }
                }
                let req = Request::from_parts(parts, Body::from(bytes));
                let res = endpoint.handle(&tenant, req).await;
                // The MCP layer answers 415 to a body it cannot read as a JSON-RPC message;
                // the Content-Type was checked before, so here that is valid JSON of another
                // shape.
                if post && res.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
                    let detail: String =
                        axum::body::to_bytes(Body::new(res.into_body()), 64 * 1024)
                            .await
                            .map(|b| {
                                String::from_utf8_lossy(&b)
                                    .chars()
                                    .take(MAX_DETAIL)
                                    .collect()
                            })
                            .unwrap_or_default();
                    return Ok(rpc_error(
                        -32600,
                        format!("Invalid Request: not a JSON-RPC 2.0 message ({detail})"),
                    ));
                }
                Ok::<_, ApiError>(res.map(Body::new))
            }
        },
    )
}

/// A JSON-RPC error answer without an id (the request's could not be read), status 400.
fn rpc_error(code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
