//! recall-server: recall over HTTP. JSON REST under `/v1` (conversations, messages, context),
//! the MCP tools over streamable HTTP at `/mcp`, bearer API keys mapped to tenants, errors as `{"error": {"type", "message"}}`, `/healthz`,
//! `/readyz`, Prometheus `/metrics`, `/openapi.json` generated from the handlers, a request id
//! on every request and log line, and a graceful shutdown that lets requests in flight finish.
//!
//! Every use case is the engine's ([`recall_engine::Engine`]); this crate reads requests,
//! authenticates them and shapes answers. It never touches SQL or provider wire types.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use recall_server::{start, ServerConfig, Upstreams};
//! let engine = recall_engine::Engine::open("/tmp/recall.db", Default::default()).await?;
//! // No chat backend (the chat routes answer 503) and no gateway upstream (its routes
//! // answer 404).
//! let server = start(engine, ServerConfig::default(), Upstreams::default(), "127.0.0.1:0".parse()?).await?;
//! println!("listening on {}", server.addr);
//! server.shutdown().await?;
//! # Ok(()) }
//! ```

pub mod auth;
pub mod body;
mod branch;
pub mod chat;
mod compact;
pub mod config;
mod conn;
pub mod error;
pub mod gateway;
pub mod guard;
mod mcp;
pub mod metrics;
pub mod openapi;
mod ops;
mod pages;
pub mod rate;
mod routes;
mod state;
mod tasks;
pub mod upstreams;
pub mod views;
pub mod web;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use recall_engine::Engine;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::Instrument;

pub use auth::{create_key, hash_key, Auth, Tenant};
pub use config::{ConfigError, ConfigKey, FileConfig, HttpLimits, RateLimit, ServerConfig};
pub use error::ApiError;
pub use state::AppState;
pub use upstreams::{default_policy, Backends, Gateway, Upstreams};

/// The request id header, taken from the client when it sends a sane one.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// A request's id (also in its log span and the `x-request-id` response header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {0}")]
    NoAuthNotLoopback(SocketAddr),
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
}

/// The whole application: `/v1` and `/mcp` behind authentication, the operational routes open;
/// with `--no-auth`, every route behind the Host and Origin checks of [`guard`].
pub fn router(state: AppState) -> Router {
    let limit = state.inner.config.limits.max_body_bytes;
    let v1 = Router::new()
        .route(
            "/v1/conversations",
            post(routes::create_conversation).get(routes::list_conversations),
        )
        .route(
            "/v1/conversations/{id}",
            get(routes::get_conversation)
                .delete(routes::delete_conversation)
                .patch(branch::update),
        )
        .route("/v1/conversations/{id}/fork", post(branch::fork))
        .route("/v1/conversations/{id}/compact", post(compact::compact))
        .route("/v1/conversations/{id}/forks", get(branch::forks))
        .route(
            "/v1/conversations/{id}/messages/{seq}",
            axum::routing::delete(branch::redact),
        )
        .route(
            "/v1/conversations/{id}/messages/{seq}/alternatives",
            get(branch::alternatives),
        )
        .route("/v1/conversations/{id}/retry", post(chat::retry_sse))
        .route("/v1/conversations/{id}/edit", post(chat::edit_sse))
        .route("/v1/search", get(branch::search))
        .route("/v1/tasks", post(tasks::create_task))
        .route("/v1/tasks/{id}", get(tasks::get_task))
        .route(
            "/v1/conversations/{id}/clear",
            post(routes::clear_conversation),
        )
        .route(
            "/v1/conversations/{id}/messages",
            post(routes::append_messages).get(routes::list_messages),
        )
        .route("/v1/conversations/{id}/context", post(routes::context))
        .route("/v1/conversations/{id}/chat", post(chat::chat_sse))
        .route("/v1/conversations/{id}/ws", get(chat::chat_ws))
        .route("/mcp", mcp::route(&state))
        .route_layer(middleware::from_fn(guard::json_only))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ));
    // The gateway: the same key check, errors in each provider's shape (the outer layer).
    let anthropic = Router::new()
        .route("/anthropic/v1/messages", post(gateway::anthropic))
        .route_layer(middleware::from_fn(guard::json_only))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ))
        .route_layer(middleware::from_fn(gateway::anthropic_errors));
    let openai = Router::new()
        .route("/openai/v1/chat/completions", post(gateway::openai))
        .route_layer(middleware::from_fn(guard::json_only))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ))
        .route_layer(middleware::from_fn(gateway::openai_errors));
    Router::new()
        .merge(v1)
        .merge(anthropic)
        .merge(openai)
        .merge(web::routes())
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(openapi::serve))
        .fallback(ops::no_route)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard::same_origin,
        ))
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// Request id, log span, one log line and metrics per request.
async fn observe(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_string);
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %method,
        route = %route,
        tenant = tracing::field::Empty,
    );
    req.extensions_mut().insert(RequestId(id.clone()));
    req.extensions_mut()
        .insert(body::BodyLimit(state.inner.config.limits.max_body_bytes));
    let mut res = next.run(req).instrument(span.clone()).await;
    let took = started.elapsed();
    let status = res.status().as_u16();
    span.in_scope(|| {
        tracing::info!(
            status,
            latency_ms = took.as_secs_f64() * 1000.0,
            "request finished"
        );
    });
    state
        .inner
        .metrics
        .request(method.as_str(), &route, status, took);
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, v);
    }
    res
}

/// A running server (see [`start`]).
pub struct RunningServer {
    /// The address it listens on (the real port when started on port 0).
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// Stops accepting connections and waits for requests in flight to finish.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.await {
            Ok(r) => Ok(r?),
            Err(e) => Err(ServerError::Io(std::io::Error::other(e))),
        }
    }
}

/// Binds `addr` after checking the limits and that `--no-auth` is only used on loopback.
pub async fn bind(addr: SocketAddr, config: &ServerConfig) -> Result<TcpListener, ServerError> {
    config.limits.check()?;
    if config.no_auth && !addr.ip().is_loopback() {
        return Err(ServerError::NoAuthNotLoopback(addr));
    }
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })
}

/// Starts a server in the background (tests, embedding); [`RunningServer::shutdown`] stops
/// it gracefully.
pub async fn start(
    engine: Engine,
    config: ServerConfig,
    upstreams: Upstreams,
    addr: SocketAddr,
) -> Result<RunningServer, ServerError> {
    let listener = bind(addr, &config).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let limits = config.limits;
    catch_up_at_start(&engine);
    let app = router(AppState::new(engine, config, upstreams));
    let task = tokio::spawn(conn::serve(listener, app, limits, async {
        let _ = stopped.await;
    }));
    Ok(RunningServer {
        addr,
        stop: Some(stop),
        task,
    })
}

/// Serves on `listener` until `shutdown` completes, then lets requests in flight finish.
/// Slow and idle connections are closed and the number of connections capped as
/// [`HttpLimits`] says.
pub async fn serve(
    listener: TcpListener,
    engine: Engine,
    config: ServerConfig,
    upstreams: Upstreams,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    if config.no_auth {
        tracing::warn!(
            "authentication is OFF (--no-auth): every request acts as the default tenant"
        );
    }
    config.limits.check()?;
    let limits = config.limits;
    catch_up_at_start(&engine);
    let app = router(AppState::new(engine, config, upstreams));
    conn::serve(listener, app, limits, shutdown).await?;
    Ok(())
}

/// Every conversation of the store with messages not embedded yet goes to the background
/// catch-up (stored by an import, by another server, before the embedder was on): in a task
/// of its own, so the server answers at once. `recall serve` and `recall mcp` both run it.
pub fn catch_up_at_start(engine: &Engine) {
    if engine.embedder().is_none() {
        return;
    }
    let engine = engine.clone();
    tokio::spawn(async move {
        match engine.embed_store_in_background().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                conversations = n,
                "embedding what is behind in the background"
            ),
            Err(e) => tracing::warn!(error = %e, "cannot read which conversations are behind"),
        }
    });
}

/// Completes on ctrl-c or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled: the server awaits it in a task of its own, which may not have
/// run yet when the first signal arrives (and an uncaught SIGTERM kills the process without
/// letting requests finish).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (term, int) = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(term) => {},
                _ = wait(int) => {},
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        tracing::info!("shutting down: finishing requests in flight");
    }
}

/// For handlers that need the method and path in an error.
pub(crate) fn describe(method: &Method, uri: &Uri) -> String {
    format!("{method} {}", uri.path())
}
