//! The MCP tools over streamable HTTP, for a web server to mount (`recall serve` does, at
//! `/mcp`). The server authenticates the request and passes its tenant to [`McpHttp::handle`];
//! this module knows nothing of keys or of any web framework, only `http` types.
//!
//! Stateless: no `Mcp-Session-Id`. Every POST carries one JSON-RPC message and is answered
//! with one JSON body (`202` for a notification); `GET` and `DELETE` are `405`. Each request
//! gets a fresh [`RecallMcp`] for the tenant it authenticated as. Binding the tenant to each
//! request rather than to a session created at `initialize` means a session id can never
//! carry one caller's tenant to another caller, and nothing lives between requests: a graceful
//! shutdown has no open streams to wait for, and any server process can answer any request.

use std::convert::Infallible;
use std::fmt::Display;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::Body;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use recall_engine::llm::Backend;
use recall_engine::Engine;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::RecallMcp;

/// How the HTTP endpoint checks requests.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Largest request body, in bytes (larger: `413`).
    pub max_body_bytes: usize,
    /// Accept only a loopback `Host` header (`localhost`, `127.0.0.1`, `::1`); anything else
    /// is `403`. This is the defence against DNS rebinding for a server that has no
    /// authentication; with API keys on, a rebound page cannot present a key, so any host
    /// name the server is reached by is accepted.
    pub loopback_hosts_only: bool,
}

/// The MCP endpoint over an engine. Cheap to clone.
#[derive(Clone)]
pub struct McpHttp {
    engine: Engine,
    config: StreamableHttpServerConfig,
    backend: Option<Arc<dyn Backend>>,
}

impl McpHttp {
    pub fn new(engine: Engine, options: HttpOptions) -> McpHttp {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_max_request_body_bytes(options.max_body_bytes);
        let config = if options.loopback_hosts_only {
            // rmcp's default list is the loopback names.
            config
        } else {
            config.disable_allowed_hosts()
        };
        McpHttp {
            engine,
            config,
            backend: None,
        }
    }

    /// The endpoint with a chat backend for `retry_turn`.
    pub fn with_backend(mut self, backend: Option<Arc<dyn Backend>>) -> McpHttp {
        self.backend = backend;
        self
    }

    /// Answers one MCP request for `tenant`: every tool call reads and writes only that
    /// tenant's conversations and tasks.
    pub async fn handle<B>(
        &self,
        tenant: &str,
        request: Request<B>,
    ) -> Response<BoxBody<Bytes, Infallible>>
    where
        B: Body + Send + 'static,
        B::Error: Display,
        B::Data: Send + 'static,
    {
        let server = match RecallMcp::new(self.engine.clone(), tenant) {
            Ok(s) => s.with_backend(self.backend.clone()),
            Err(e) => return internal_error(&e.to_string()),
        };
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            self.config.clone(),
        );
        service.handle(request).await
    }
}

fn internal_error(message: &str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut res = Response::new(Full::new(Bytes::from(message.to_string())).boxed());
    *res.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    res
}
