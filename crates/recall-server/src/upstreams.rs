//! What a server talks to besides its database, made once at start-up: the chat backends
//! (`/chat`, `/retry`, `/edit`, the WebSocket, compaction) and the gateway's upstream
//! providers. These are live clients, not settings: they travel beside `ServerConfig`
//! (which a config file fills) as [`Upstreams`], and the shared state holds both.

use std::fmt;
use std::sync::Arc;

use recall_core::gateway::Provider;
use recall_core::policy::{Count, PolicyOverrides, TrimMode};
use recall_engine::llm::proxy::Upstream;
use recall_engine::llm::Backend;

use crate::error::ApiError;

/// The live parts a server is started with besides its engine: none by default (the chat
/// routes then answer 503, the gateway routes 404 `no_upstream`).
#[derive(Debug, Clone, Default)]
pub struct Upstreams {
    /// Chat backends by name (none: the chat routes answer 503).
    pub backends: Backends,
    /// The gateway's upstreams (none: its routes answer 404) and new conversations' policy.
    pub gateway: Gateway,
}

/// The chat backends a server offers, by name; the first is the default.
#[derive(Clone, Default)]
pub struct Backends {
    list: Vec<(String, Arc<dyn Backend>)>,
}

impl fmt::Debug for Backends {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|(n, _)| n))
            .finish()
    }
}

impl Backends {
    /// Adds a backend under `name` (the first added is the default).
    pub fn with(mut self, name: impl Into<String>, backend: Arc<dyn Backend>) -> Backends {
        self.list.push((name.into(), backend));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The default backend (the first), if any.
    pub fn default_backend(&self) -> Option<Arc<dyn Backend>> {
        self.list.first().map(|(_, b)| b.clone())
    }

    /// The backend named `name`, if this server has it.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Backend>> {
        self.list
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
    }

    /// The names, default first.
    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(|(n, _)| n.as_str()).collect()
    }

    pub(crate) fn pick(&self, name: Option<&str>) -> Result<(String, Arc<dyn Backend>), ApiError> {
        let found = match name {
            None => self.list.first(),
            Some(n) => self.list.iter().find(|(k, _)| k == n),
        };
        match (found, name) {
            (Some((n, b)), _) => Ok((n.clone(), b.clone())),
            (None, None) => Err(ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!(
                    "this server has no chat backend configured: restart `recall serve` with \
                     one in its environment ({})",
                    recall_engine::llm::discover::HOW_TO_CONFIGURE
                ),
            )),
            (None, Some(n)) => Err(ApiError::invalid(format!(
                "unknown backend '{n}' (this server has: {})",
                self.names().join(", ")
            ))),
        }
    }
}

/// The providers a server forwards to, and the policy of the conversations it creates.
#[derive(Clone)]
pub struct Gateway {
    pub anthropic: Option<Arc<Upstream>>,
    pub openai: Option<Arc<Upstream>>,
    /// The context policy of a conversation the gateway creates (default: a stable window of
    /// 100,000 tokens).
    pub policy: PolicyOverrides,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("anthropic", &self.anthropic.is_some())
            .field("openai", &self.openai.is_some())
            .field("policy", &self.policy)
            .finish()
    }
}

impl Default for Gateway {
    fn default() -> Self {
        Gateway::new()
    }
}

impl Gateway {
    /// No upstream, and the default policy for new conversations.
    pub fn new() -> Gateway {
        Gateway {
            anthropic: None,
            openai: None,
            policy: default_policy(),
        }
    }

    pub(crate) fn upstream(&self, p: Provider) -> Option<&Arc<Upstream>> {
        match p {
            Provider::Anthropic => self.anthropic.as_ref(),
            Provider::OpenAi => self.openai.as_ref(),
        }
    }
}

/// A stable window of 100,000 tokens: a long chat never grows past what the models take,
/// and the window's start moves seldom, so the providers' prompt caches keep hitting.
pub fn default_policy() -> PolicyOverrides {
    PolicyOverrides {
        max_tokens: Some(Count::from(100_000u32)),
        trim: Some(TrimMode::Stable),
        ..Default::default()
    }
}
