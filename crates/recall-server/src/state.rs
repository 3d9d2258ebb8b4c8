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
        AppState {
            inner: Arc::new(Inner {
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
