//! recall-llm: the language-model backends of recall, streaming one event type.
//!
//! - [`AnthropicBackend`]: the Anthropic Messages API (`POST {base}/v1/messages`, SSE).
//! - [`OpenAiBackend`]: OpenAI-compatible chat completions (`POST {base}/v1/chat/completions`).
//! - [`ClaudeCliBackend`]: the Claude Code CLI as a subprocess, history rendered into one
//!   prompt on stdin.
//!
//! Every backend implements [`Backend`]: [`Backend::stream`] returns a stream of
//! [`BackendEvent`]s that ends with exactly one [`BackendEvent::Done`] or
//! [`BackendEvent::Error`]. [`Assembler`] (or [`collect`]) folds the events into the assistant
//! [`recall_core::Message`] to store, complete or partial.
//!
//! This crate knows nothing about storage. Wire formats are written by hand from the providers'
//! documented APIs and recorded real streams (`tests/data/`);
//! API keys never appear in errors, logs or `Debug` output.
//!
//! ```no_run
//! # async fn demo() -> Result<(), recall_llm::BackendError> {
//! use recall_core::{Message, Role};
//! use recall_llm::{AnthropicBackend, Backend, ChatRequest, HttpConfig, collect};
//! use tokio_util::sync::CancellationToken;
//!
//! let backend = AnthropicBackend::new(HttpConfig::anthropic().with_key("sk-ant-…"))?;
//! let req = ChatRequest::new(vec![Message::text(Role::User, "Hello")]);
//! let events = backend.stream(req, CancellationToken::new()).await?;
//! let reply = collect(events).await;
//! println!("{} ({:?})", reply.text(), reply.status);
//! # Ok(()) }
//! ```

pub mod anthropic;
pub mod assemble;
pub mod backend;
pub mod claude_cli;
pub mod discover;
pub mod error;
pub mod event;
pub mod http;
pub mod key;
pub mod openai;
pub mod proxy;
mod render;
pub mod retry;
mod sse;

use std::sync::Arc;

pub use anthropic::AnthropicBackend;
pub use assemble::{collect, AssembledReply, Assembler, ReplyStatus};
pub use backend::{Backend, EventStream};
pub use claude_cli::{ClaudeCliBackend, ClaudeCliConfig, PromptFormat};
pub use error::{BackendError, BackendErrorKind};
pub use event::{BackendEvent, ChatRequest, ReplyMeter, Usage};
pub use http::{HttpConfig, Timeouts};
pub use key::ApiKey;
pub use openai::OpenAiBackend;
pub use retry::RetryPolicy;

/// Which backend to build, with its settings.
#[derive(Debug, Clone)]
pub enum BackendConfig {
    /// The Anthropic Messages API.
    Anthropic(HttpConfig),
    /// An OpenAI-compatible chat completions server.
    OpenAi(HttpConfig),
    /// The Claude Code CLI.
    ClaudeCli(ClaudeCliConfig),
}

/// Builds the backend `config` describes.
pub fn build_backend(config: BackendConfig) -> Result<Arc<dyn Backend>, BackendError> {
    Ok(match config {
        BackendConfig::Anthropic(c) => Arc::new(AnthropicBackend::new(c)?),
        BackendConfig::OpenAi(c) => Arc::new(OpenAiBackend::new(c)?),
        BackendConfig::ClaudeCli(c) => Arc::new(ClaudeCliBackend::new(c)),
    })
}
