//! The state every handler shares: the engine, authentication, the configuration, metrics
//! and rate limits. Its own module, below the handlers, so that they import it without
//! importing the router (lib.rs) that imports them.

use std::sync::Arc;

use recall_engine::Engine;

use crate::auth::Auth;
use crate::config::ServerConfig;
use crate::upstreams::Upstreams;
use crate::{metrics, rate};

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) engine: Engine,
    pub(crate) auth: Auth,
    pub(crate) config: ServerConfig,
    pub(crate) upstreams: Upstreams,
    pub(crate) metrics: metrics::Metrics,
    pub(crate) rate: rate::RateLimiter,
    /// The places WebSockets may hold: half of `max_connections` (at least one), so that
    /// sockets kept open, however live, never take the places plain requests and `/healthz`
    /// need.
    pub(crate) ws_places: Arc<tokio::sync::Semaphore>,
}

impl AppState {
    /// State for `engine` under `config` (keys from the config, then the database), talking
    /// to `upstreams`.
    pub fn new(engine: Engine, config: ServerConfig, upstreams: Upstreams) -> AppState {
        let auth = if config.no_auth {
            Auth::Disabled
        } else {
            Auth::from_config(&config.keys)
        };
        let ws_places = Arc::new(tokio::sync::Semaphore::new(websocket_places(
            config.limits.max_connections,
        )));
        AppState {
            inner: Arc::new(Inner {
                ws_places,
                engine,
                auth,
                rate: rate::RateLimiter::new(config.rate_limit),
                config,
                upstreams,
                metrics: metrics::Metrics::default(),
            }),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }
}

/// How many WebSockets may be open at once under `max_connections`: half of it, at least one.
pub(crate) fn websocket_places(max_connections: usize) -> usize {
    (max_connections / 2).max(1)
}
