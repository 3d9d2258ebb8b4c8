//! The chat turn: persist the user message, build the context with the conversation's
//! policy, stream the reply from a backend, and persist it — `partial` with whatever arrived
//! when the stream fails or is cancelled, so a turn is never lost.
//!
//! A turn names its conversation with a `ConversationRef` (the tenant and id as one value), as
//! retry and edit do. The user message is committed before the backend is called; the reply is
//! saved as `partial` while it streams, at most every `PARTIAL_SAVE_INTERVAL` (500 ms), and
//! finally as `complete` or `partial`.

use std::time::Duration;

use futures::StreamExt;
use recall_core::context::{ContextOutput, ContextRequest};
use recall_core::message::{Block, Content, Message, Role};
use recall_core::policy::PolicyOverrides;
use recall_core::select::Stats;
use recall_llm::{
    AssembledReply, Assembler, Backend, BackendError, BackendEvent, ChatRequest, Usage,
};
use recall_store::{MessageStatus, NewMessage};
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{ConversationRef, Engine, EngineError};

/// How often a reply that is still streaming is saved as `partial`: a process killed
/// mid-stream loses at most this much of the reply, never the turn.
pub const PARTIAL_SAVE_INTERVAL: Duration = Duration::from_millis(500);

/// One chat turn to run.
#[derive(Debug, Clone, Default)]
pub struct ChatTurn {
    /// The user's message: a string or content blocks (Anthropic shape).
    pub content: Value,
    /// Client idempotency key of the user message.
    pub client_id: Option<String>,
    /// The model; `None` uses the backend's default.
    pub model: Option<String>,
    /// The most tokens the reply may have (`None`: [`ChatRequest::DEFAULT_MAX_TOKENS`]). Not
    /// the history budget, which is `overrides.max_tokens`.
    pub max_output_tokens: Option<u32>,
    /// Context limits over the backend format's defaults and the conversation's policy.
    pub overrides: PolicyOverrides,
}

impl ChatTurn {
    /// A turn with a text message and default limits.
    pub fn text(content: impl Into<String>) -> ChatTurn {
        ChatTurn {
            content: Value::String(content.into()),
            ..ChatTurn::default()
        }
    }
}

/// What a running turn reports, in order: the stored user message, the context that was
/// built, then the backend's events as they arrive (the terminal one included).
#[derive(Debug, Clone)]
pub enum TurnEvent {
    /// The user message is stored.
    UserStored { seq: i64 },
    /// The context was built; `stats.notice` is set when old messages were trimmed.
    ContextBuilt { stats: Stats },
    /// A backend event.
    Backend(BackendEvent),
    /// A retry or an edit made a fork: the turn runs on this conversation.
    Forked { conversation_id: String },
}

/// How a turn ended. Backend failures are reported here, not as an `Err`: the user message
/// is stored by then and what arrived of the reply is too.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The user message's seq.
    pub user_seq: i64,
    /// The assistant reply's seq, when anything of it arrived.
    pub reply_seq: Option<i64>,
    /// Complete, or partial (failed or cancelled).
    pub status: MessageStatus,
    /// The reply as stored (an empty assistant message when nothing arrived).
    pub reply: Message,
    /// Usage as the backend last reported it.
    pub usage: Usage,
    pub stop_reason: Option<String>,
    /// Why the reply is partial or missing.
    pub error: Option<BackendError>,
    /// The selection's figures for the context that was sent.
    pub stats: Stats,
}

impl TurnOutcome {
    /// The reply's text blocks, concatenated.
    pub fn text(&self) -> String {
        match &self.reply.content {
            Content::Text(s) => s.clone(),
            Content::Blocks(b) => b
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// A built chat request and the context it came from.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    pub request: ChatRequest,
    pub context: ContextOutput,
}

impl Engine {
    /// Checks that `overrides` over the conversation's policy and `backend`'s format defaults
    /// make a valid policy (`recall_tokens` under `max_tokens`, …): a turn calls it before it
    /// stores or forks anything, so a bad policy is a refused request that changes nothing
    /// rather than an error after the user message is stored.
    pub(crate) async fn check_turn_policy(
        &self,
        c: ConversationRef<'_>,
        backend: &dyn Backend,
        overrides: &PolicyOverrides,
    ) -> Result<(), EngineError> {
        let conversation = self.store.get_conversation(c.tenant, c.id).await?;
        let mut req = ContextRequest::new(backend.context_format());
        req.overrides = overrides.clone();
        crate::resolve(&conversation, &req).map(|_| ())
    }

    /// Builds the request a backend would be sent for this conversation now, with the
    /// backend's context format and the conversation's policy. `next` is a user message to
    /// add after the stored history without storing it (a preview of the next turn); with
    /// `None` the stored history must already end with the user message.
    pub async fn chat_request(
        &self,
        c: ConversationRef<'_>,
        backend: &dyn Backend,
        overrides: &PolicyOverrides,
        next: Option<String>,
    ) -> Result<PreparedRequest, EngineError> {
        let mut req = ContextRequest::new(backend.context_format());
        req.overrides = overrides.clone();
        req.current = next;
        let context = self.context(c, &req).await?;
        let request = ChatRequest {
            system: context.system(),
            messages: context.messages(),
            model: None,
            max_tokens: ChatRequest::DEFAULT_MAX_TOKENS,
            // The one reply cap: the adapter stops reading past it.
            max_reply_bytes: Some(self.limits.max_message_bytes),
        };
        Ok(PreparedRequest { request, context })
    }

    /// Runs one chat turn on conversation `id`: stores the user message, builds the context
    /// with the conversation's policy for `backend`'s format, streams the reply (every event
    /// goes to `on_event` as it arrives) and stores it.
    ///
    /// The reply is saved as `partial` while it streams (at most every
    /// [`PARTIAL_SAVE_INTERVAL`]) and once more at the end: `complete` after `Done`,
    /// `partial` after an error or when `cancel` fires. Tool results a backend produced itself
    /// (the Claude Code CLI) are stored as a user message after the reply.
    ///
    /// `Err` means nothing was sent: the conversation does not exist, the message or the
    /// policy is invalid (then nothing is stored), or the context could not be built (the user
    /// message is stored). Backend failures end in `Ok` with [`TurnOutcome::error`] set. Run it to
    /// completion — in its own task when the caller may go away — and stop it with `cancel`:
    /// a dropped future cannot save the reply's last part.
    pub async fn chat_turn(
        &self,
        conv: ConversationRef<'_>,
        backend: &dyn Backend,
        turn: ChatTurn,
        cancel: CancellationToken,
        mut on_event: impl FnMut(TurnEvent) + Send,
    ) -> Result<TurnOutcome, EngineError> {
        let ConversationRef { tenant, id } = conv;
        let user = self.user_message(&turn)?;
        // Check the conversation and the policy before storing anything, so a wrong id or a
        // bad limit changes nothing.
        self.check_turn_policy(conv, backend, &turn.overrides)
            .await?;
        let stored = self
            .store
            .append(tenant, id, vec![NewMessage::complete(user)])
            .await?;
        let appended = stored
            .first()
            .copied()
            .ok_or_else(|| EngineError::Invalid("the user message was not stored".into()))?;
        if appended.duplicate {
            return Err(EngineError::AlreadySent {
                client_id: turn.client_id.clone().unwrap_or_default(),
                seq: appended.seq,
            });
        }
        let user_seq = appended.seq;
        self.appended(tenant, id);
        on_event(TurnEvent::UserStored { seq: user_seq });
        self.reply_turn(conv, backend, &turn, user_seq, cancel, &mut on_event)
            .await
    }

    /// The second half of a chat turn: the history ends with the message to answer
    /// (`user_seq`); builds the context, streams the reply and stores it (see
    /// [`Engine::chat_turn`]). A retry runs it alone on a fork.
    pub(crate) async fn reply_turn(
        &self,
        conv: ConversationRef<'_>,
        backend: &dyn Backend,
        turn: &ChatTurn,
        user_seq: i64,
        cancel: CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<TurnOutcome, EngineError> {
        let ConversationRef { tenant, id } = conv;
        let prepared = self
            .chat_request(
                ConversationRef::new(tenant, id),
                backend,
                &turn.overrides,
                None,
            )
            .await?;
        let stats = prepared.context.stats.clone();
        let format = prepared.context.format;
        let summarizes = prepared.context.policy.summarize;
        let window_first = prepared.context.kept.first().map(|k| k.index as i64);
        on_event(TurnEvent::ContextBuilt {
            stats: stats.clone(),
        });
        let mut request = prepared.request;
        request.model = turn.model.clone();
        if let Some(n) = turn.max_output_tokens {
            request.max_tokens = n;
        }

        let mut saver = ReplySaver::new(self, tenant, id, backend, turn.model.clone());
        let mut assembler = Assembler::new();
        // Counted here too, for a backend that does not keep `max_reply_bytes` itself: past
        // the cap the stream is dropped (which cancels it) and what fitted is the partial
        // reply, on every path a turn takes (HTTP, SSE, WebSocket, the CLI, MCP).
        let mut meter = recall_llm::ReplyMeter::new(self.limits.max_message_bytes);
        match backend.stream(request, cancel.clone()).await {
            Err(e) => assembler.push(&BackendEvent::Error(e)),
            Ok(mut events) => {
                while let Some(ev) = events.next().await {
                    let ev = match meter.admit(&ev, 0) {
                        Ok(()) => ev,
                        Err(over) => BackendEvent::Error(over),
                    };
                    assembler.push(&ev);
                    let terminal = ev.is_terminal();
                    on_event(TurnEvent::Backend(ev));
                    if terminal {
                        break;
                    }
                    if assembler.has_content() && saver.due() {
                        saver
                            .save(
                                &assembler.message(),
                                MessageStatus::Partial,
                                &assembler.usage(),
                                None,
                                None,
                            )
                            .await?;
                    }
                }
            }
        }
        if !assembler.is_finished() {
            // The stream ended without a terminal event: a broken adapter, not a reply.
            assembler.push(&BackendEvent::Error(BackendError::new(
                recall_llm::BackendErrorKind::Stream {
                    message: "the backend's stream ended without a final event".into(),
                },
            )));
        }
        let reply = assembler.finish();
        let status = saver.finish(&reply).await?;
        if saver.seq.is_some() && !reply.tool_results.is_empty() {
            let results = Message::blocks(Role::User, reply.tool_results.clone());
            self.store
                .append(tenant, id, vec![NewMessage::complete(results)])
                .await?;
        }
        self.appended(tenant, id);
        if summarizes {
            self.compact_after_turn(tenant, id, format, &turn.overrides, &stats, window_first);
        }
        Ok(TurnOutcome {
            user_seq,
            reply_seq: saver.seq,
            status,
            reply: reply.message,
            usage: reply.usage,
            stop_reason: reply.stop_reason,
            error: reply.error,
            stats,
        })
    }

    /// The user message of a turn, checked like any appended message (non-empty, size).
    pub(crate) fn user_message(&self, turn: &ChatTurn) -> Result<Message, EngineError> {
        if let Value::String(s) = &turn.content {
            if s.trim().is_empty() {
                return Err(EngineError::Invalid(
                    "the message is empty: type something to send".into(),
                ));
            }
        }
        let mut value = Map::new();
        value.insert("role".into(), Value::String("user".into()));
        value.insert("content".into(), turn.content.clone());
        if let Some(cid) = &turn.client_id {
            value.insert("id".into(), Value::String(cid.clone()));
        }
        let m = self.validate_message(Value::Object(value), 0)?;
        if m.role != Role::User {
            return Err(EngineError::Invalid(
                "a chat turn sends a user message".into(),
            ));
        }
        Ok(m)
    }
}

/// Saves the assistant reply: appended the first time, updated in place after that.
pub(crate) struct ReplySaver<'a> {
    engine: &'a Engine,
    tenant: &'a str,
    id: &'a str,
    backend: &'static str,
    model: Option<String>,
    pub(crate) seq: Option<i64>,
    last_save: Option<Instant>,
    /// Set: the first partial save waits until then (see [`ReplySaver::deferred`]).
    first_save_at: Option<Instant>,
}

impl<'a> ReplySaver<'a> {
    fn new(
        engine: &'a Engine,
        tenant: &'a str,
        id: &'a str,
        backend: &dyn Backend,
        model: Option<String>,
    ) -> Self {
        Self::named(engine, tenant, id, backend.name(), model)
    }

    /// A saver that records `backend` as the reply's source.
    pub(crate) fn named(
        engine: &'a Engine,
        tenant: &'a str,
        id: &'a str,
        backend: &'static str,
        model: Option<String>,
    ) -> Self {
        ReplySaver {
            engine,
            tenant,
            id,
            backend,
            model,
            seq: None,
            last_save: None,
            first_save_at: None,
        }
    }

    /// The first partial save waits [`PARTIAL_SAVE_INTERVAL`] from now: a reply that ends
    /// sooner is written once, complete (an append, where a partial save and its rewrite
    /// would also step the stable windows back), and a process killed mid-stream still
    /// loses at most that interval of it.
    pub(crate) fn deferred(mut self) -> Self {
        self.first_save_at = Some(Instant::now() + PARTIAL_SAVE_INTERVAL);
        self
    }

    /// True when a partial save is due: never saved yet, or the interval has passed.
    pub(crate) fn due(&self) -> bool {
        match self.last_save {
            Some(t) => t.elapsed() >= PARTIAL_SAVE_INTERVAL,
            None => self.first_save_at.is_none_or(|at| Instant::now() >= at),
        }
    }

    pub(crate) async fn save(
        &mut self,
        message: &Message,
        status: MessageStatus,
        usage: &Usage,
        stop_reason: Option<&str>,
        error: Option<&BackendError>,
    ) -> Result<(), EngineError> {
        let mut message = message.clone();
        message.metadata = Some(self.metadata(usage, stop_reason, error));
        let new = NewMessage {
            message,
            status,
            figures: None,
        };
        match self.seq {
            None => {
                let out = self
                    .engine
                    .store
                    .append(self.tenant, self.id, vec![new])
                    .await?;
                self.seq = out.first().map(|a| a.seq);
            }
            Some(seq) => {
                self.engine
                    .store
                    .update_message(self.tenant, self.id, seq, new)
                    .await?
            }
        }
        self.last_save = Some(Instant::now());
        Ok(())
    }

    /// Saves the finished reply: `complete`, or `partial` when it was cut short. A reply
    /// with no content that was never saved is not stored (the status is still returned).
    pub(crate) async fn finish(
        &mut self,
        reply: &AssembledReply,
    ) -> Result<MessageStatus, EngineError> {
        let status = if reply.is_complete() {
            MessageStatus::Complete
        } else {
            MessageStatus::Partial
        };
        if reply.has_content() || self.seq.is_some() {
            self.save(
                &reply.message,
                status,
                &reply.usage,
                reply.stop_reason.as_deref(),
                reply.error.as_ref(),
            )
            .await?;
        }
        Ok(status)
    }

    /// What is kept about the reply beside its content: the backend, the model, usage, the
    /// stop reason and the error that cut it short.
    fn metadata(
        &self,
        usage: &Usage,
        stop_reason: Option<&str>,
        error: Option<&BackendError>,
    ) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("backend".into(), Value::String(self.backend.into()));
        if let Some(model) = &self.model {
            m.insert("model".into(), Value::String(model.clone()));
        }
        if !usage.is_empty() {
            m.insert(
                "usage".into(),
                serde_json::to_value(usage).unwrap_or(Value::Null),
            );
        }
        if let Some(r) = stop_reason {
            m.insert("stop_reason".into(), Value::String(r.into()));
        }
        if let Some(e) = error {
            m.insert("error".into(), Value::String(e.to_string()));
        }
        m
    }
}
