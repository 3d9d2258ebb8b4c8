//! recall-engine: the use cases every interface shares. The CLI, the HTTP server and the MCP
//! server parse their own arguments and call these functions; none of them talks to the store
//! or renders a prompt by itself.
//!
//! ```no_run
//! # async fn demo() -> Result<(), recall_engine::EngineError> {
//! use recall_engine::{ConversationRef, Engine, Limits};
//! use recall_core::{ContextRequest, Format};
//! let engine = Engine::open("sqlite:///tmp/recall.db", Limits::default()).await?;
//! let conv = engine.create_conversation("default", Default::default()).await?;
//! // A conversation is named by its tenant and id together.
//! let at = ConversationRef::new("default", &conv.id);
//! engine.append_message(at, serde_json::json!({"role": "user", "content": "hi"})).await?;
//! let ctx = engine.context(at, &ContextRequest::new(Format::Transcript)).await?;
//! println!("{}", ctx.prompt.to_text());
//! # Ok(()) }
//! ```

mod backlog;
mod catch_up;
mod chat;
mod context;
mod error;
mod forks;
mod gateway;
mod index;
mod mirror;
mod recall;
mod redaction;
mod summaries;
mod task;
mod transfer;
mod turns;
mod vectors;
pub mod views;

use std::sync::Arc;

use recall_core::context::{ContextOutput, ContextRequest, Resolved};
use recall_core::message::Message;
use recall_core::parse::parse_message_value;
use recall_store::{Appended, Conversation, NewConversation, NewMessage, Store};
use serde_json::Value;

pub use catch_up::EmbedReport;
pub use chat::{ChatTurn, PreparedRequest, TurnEvent, TurnOutcome, PARTIAL_SAVE_INTERVAL};
pub use context::prompt_bytes;
pub use error::EngineError;
pub use forks::{Alternative, Branched};
pub use gateway::{
    GatewayCall, GatewayEvent, GatewayMode, GatewayOutcome, GatewayRequest, MAX_WHOLE_REPLY_BYTES,
};
pub use index::INDEX_BUDGET;
pub use recall_embed as embed;
pub use recall_llm as llm;
pub use recall_store::{self as store, ConversationRef, DEFAULT_TENANT};
pub use summaries::{
    CompactOptions, CompactProgress, CompactReport, CompactStatus, Progress, DEFAULT_LEASE,
};
pub use task::{TaskReport, MAX_SEARCH_LIMIT};
pub use transfer::{ImportReport, ImportTarget};
pub use vectors::EMBED_BATCH;

/// Size limits applied to everything that comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest message, as the bytes of its JSON content (default 1 MiB).
    pub max_message_bytes: usize,
    /// Most messages accepted in one append request (imports are not limited).
    pub max_messages_per_append: usize,
    /// Largest context prompt the engine builds (a text prompt's UTF-8 bytes, a JSON prompt's
    /// compact serialisation), on every path that builds one: contexts, chat, retry and edit
    /// turns, compaction, the gateway, MCP. Over it the context is refused with
    /// [`EngineError::ContextTooLarge`], read no further than the limit needs
    /// ([`Engine::context_within`]). `None`: no limit (a library's own choice; the server
    /// and `recall mcp` set one).
    pub max_context_bytes: Option<usize>,
}

/// The server's and `recall mcp`'s [`Limits::max_context_bytes`] unless configured: 32 MiB.
pub const DEFAULT_MAX_CONTEXT_BYTES: usize = 32 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 1 << 20,
            max_messages_per_append: 1000,
            max_context_bytes: None,
        }
    }
}

/// The result of an append: one entry per message, and the warnings of validation.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AppendReport {
    pub appended: Vec<Appended>,
    pub warnings: Vec<String>,
}

/// The engine: a store and the limits.
#[derive(Clone)]
pub struct Engine {
    store: Arc<dyn Store>,
    limits: Limits,
    /// The embedder and its catch-up, when one is configured ([`Engine::with_embedder`]).
    vectors: Option<vectors::Vectors>,
    /// The summariser run after chat turns, when one is configured
    /// ([`Engine::with_summarizer`]).
    summarizer: Option<summaries::Summarizer>,
    /// One gateway turn at a time per conversation ([`turns`]).
    turns: turns::TurnLocks,
    /// Recall's lexical index, caught up off the request path ([`index`]).
    index: index::IndexCatchUp,
}

impl Engine {
    /// Wraps a store.
    pub fn new(store: Arc<dyn Store>, limits: Limits) -> Engine {
        Engine {
            store,
            limits,
            vectors: None,
            summarizer: None,
            turns: turns::TurnLocks::default(),
            index: index::IndexCatchUp::default(),
        }
    }

    /// Opens the database a URL names (see [`recall_store::open`]).
    pub async fn open(url: &str, limits: Limits) -> Result<Engine, EngineError> {
        Engine::open_with(url, limits, recall_store::SqliteOptions::default()).await
    }

    /// [`Engine::open`] with the settings of a SQLite store (a PostgreSQL URL ignores them).
    pub async fn open_with(
        url: &str,
        limits: Limits,
        sqlite: recall_store::SqliteOptions,
    ) -> Result<Engine, EngineError> {
        let store = recall_store::open_with(url, sqlite).await?;
        Ok(Engine::new(Arc::from(store), limits))
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Creates a conversation. A default policy, when given, must be a valid policy object.
    pub async fn create_conversation(
        &self,
        tenant: &str,
        new: NewConversation,
    ) -> Result<Conversation, EngineError> {
        check_policy(&new)?;
        Ok(self.store.create_conversation(tenant, new).await?)
    }

    /// The conversation a client names `key`, created with `new` on first use (`new` is
    /// ignored when it exists); whether it was created. A key that is one of the tenant's
    /// conversation ids opens that conversation, so code that passes an id it stored keeps
    /// working; any other key is a name of the client's own, unique per tenant, and two
    /// processes opening one new name at once get one conversation.
    pub async fn open_conversation(
        &self,
        tenant: &str,
        key: &str,
        new: NewConversation,
    ) -> Result<(Conversation, bool), EngineError> {
        check_policy(&new)?;
        match self.store.get_conversation(tenant, key).await {
            Ok(c) => return Ok((c, false)),
            Err(recall_store::StoreError::ConversationNotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(self.store.open_conversation(tenant, key, new).await?)
    }

    pub async fn get_conversation(
        &self,
        c: ConversationRef<'_>,
    ) -> Result<Conversation, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        Ok(self.store.get_conversation(tenant, id).await?)
    }

    /// The tenants holding a conversation with this id (at most 20, in name order): for an
    /// operator's "not found" that says where it is. Never answer a tenant's request with it.
    pub async fn conversation_tenants(&self, id: &str) -> Result<Vec<String>, EngineError> {
        Ok(self.store.conversation_tenants(id).await?)
    }

    pub async fn list_conversations(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Conversation>, EngineError> {
        Ok(self.store.list_conversations(tenant, after, limit).await?)
    }

    /// Deletes a conversation; one with forks only with `cascade` (which deletes them too).
    /// Returns how many conversations were deleted.
    pub async fn delete_conversation(
        &self,
        c: ConversationRef<'_>,
        cascade: bool,
    ) -> Result<u64, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        Ok(self.store.delete_conversation(tenant, id, cascade).await?)
    }

    pub async fn clear_conversation(&self, c: ConversationRef<'_>) -> Result<u64, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        Ok(self.store.clear_conversation(tenant, id).await?)
    }

    /// Checks one message (always strict, docs/FORMATS.md §3) and its size.
    pub fn validate_message(&self, value: Value, index: usize) -> Result<Message, EngineError> {
        let m = parse_message_value(value, index, "messages")
            .map_err(|e| EngineError::Invalid(e.to_string()))?;
        self.check_size(&m, || format!("message {index}"))?;
        Ok(m)
    }

    /// The one size rule of every route: a message's content as it would be stored — text,
    /// every block, a tool call's arguments, a tool result — at most `max_message_bytes`
    /// ([`message_bytes`]). `what` names the message in the error.
    pub(crate) fn check_size(
        &self,
        m: &Message,
        what: impl FnOnce() -> String,
    ) -> Result<(), EngineError> {
        let size = message_bytes(m);
        if size > self.limits.max_message_bytes {
            return Err(EngineError::TooLarge {
                what: what(),
                size,
                limit: self.limits.max_message_bytes,
            });
        }
        Ok(())
    }

    /// Appends one message given as JSON (Anthropic- or OpenAI-shaped). Strict: an invalid or
    /// empty message is an error and nothing is stored. The error speaks of "the message", not
    /// of `messages[0]` of a batch that is all or nothing.
    pub async fn append_message(
        &self,
        c: ConversationRef<'_>,
        value: Value,
    ) -> Result<Appended, EngineError> {
        let report = self
            .append_messages(c, vec![value])
            .await
            .map_err(error::one_message)?;
        report
            .appended
            .into_iter()
            .next()
            .ok_or_else(|| EngineError::Invalid("nothing was appended".into()))
    }

    /// Appends several messages in one transaction. Every message is validated strictly
    /// first; one invalid message rejects the request and nothing is stored. OpenAI `tool`
    /// messages in a row become one user message of tool results, as in an import. A client
    /// id already used for a different message is [`EngineError::Conflict`] (its `index` is
    /// the request entry) and nothing is stored; the same message again is a duplicate.
    pub async fn append_messages(
        &self,
        c: ConversationRef<'_>,
        values: Vec<Value>,
    ) -> Result<AppendReport, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        if values.is_empty() {
            return Err(EngineError::Invalid("no messages to append".into()));
        }
        if values.len() > self.limits.max_messages_per_append {
            return Err(EngineError::Invalid(format!(
                "{} messages in one request, over the limit of {}",
                values.len(),
                self.limits.max_messages_per_append
            )));
        }
        let conv = recall_core::parse::conversation_from_value(
            Value::Array(values),
            &recall_core::parse::ParseOptions::strict(),
        )?;
        for m in &conv.messages {
            self.check_size(&m.message, || format!("messages[{}]", m.index))?;
        }
        // An entry of the request per message (OpenAI tool messages in a row merge into one).
        let entries: Vec<usize> = conv.messages.iter().map(|m| m.index).collect();
        let messages: Vec<NewMessage> = conv
            .messages
            .into_iter()
            .map(|m| NewMessage::complete(m.message))
            .collect();
        let appended = self
            .store
            .append(tenant, id, messages)
            .await
            .map_err(|e| error::at_request(e, |i| entries.get(i).copied().unwrap_or(i)))?;
        self.appended(tenant, id);
        Ok(AppendReport {
            appended,
            warnings: conv.warnings,
        })
    }

    /// Builds the context of a stored conversation: the request's format (else the
    /// conversation's, else `transcript`), that format's defaults, then the conversation's
    /// default policy, then the request's values ([`ContextRequest::resolve`]). Only the
    /// messages the limits can reach are read. Refused over [`Limits::max_context_bytes`]
    /// (see [`Engine::context_within`]).
    pub async fn context(
        &self,
        c: ConversationRef<'_>,
        req: &ContextRequest,
    ) -> Result<ContextOutput, EngineError> {
        self.context_within(c, req, self.limits.max_context_bytes)
            .await
    }
}

/// The format and policy of `req` over the conversation's stored policy.
pub fn resolve(conv: &Conversation, req: &ContextRequest) -> Result<Resolved, EngineError> {
    Ok(req.resolve(conv.policy.as_ref())?)
}

/// A message's size for `max_message_bytes`: its content in the stored form — a text's UTF-8
/// bytes, or the JSON of its blocks (an OpenAI `tool_calls` is `tool_use` blocks by then, so
/// its arguments count like any other part).
pub fn message_bytes(m: &Message) -> usize {
    m.to_json().get("content").map_or(0, json_len)
}

pub(crate) fn json_len(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        other => other.to_string().len(),
    }
}

/// A new conversation's policy, checked before anything is stored.
fn check_policy(new: &NewConversation) -> Result<(), EngineError> {
    if let Some(p) = &new.policy {
        p.validate()
            .map_err(|e| EngineError::Invalid(format!("invalid context policy: {e}")))?;
    }
    Ok(())
}
