//! The gateway turn (issue 17): a provider request from an official SDK (Anthropic Messages,
//! OpenAI chat completions) on a stored conversation. What is new in the request is stored
//! (append or mirror, recall-core's `gateway::match_history`), the context is built with the
//! conversation's policy (window, recall, summary) and put in the client's request in place
//! of its history, the request goes to the provider, and the reply is passed back byte for
//! byte while it is read into the message stored (`partial` while it streams and when the
//! client or the provider goes away).
//!
//! Two calls, so that a server can run the second in a task of its own: `gateway_prepare` stores
//! what is new in the request and builds the body to forward; `gateway_forward` sends it through
//! recall-llm's `proxy::Upstream`, and `relay` passes the answer on chunk by chunk while it
//! stores the reply read from the same bytes. The turn holds its conversation's lock (`turns`)
//! from the read of the stored history until the reply is stored.

use std::time::Duration;

use bytes::Bytes;

use recall_core::context::ContextRequest;
use recall_core::gateway::{forward_body, split_request, Incoming, Provider};
use recall_core::message::Message;
use recall_core::parse::{conversation_from_value, ParseOptions};
use recall_core::policy::{ConversationPolicy, Policy, PolicyOverrides};
use recall_core::select::{HistoryMessage, Stats};
use recall_core::Prompt;
use recall_llm::proxy::{HeaderMap, HeaderName, HeaderValue, Upstream};
use recall_llm::{Assembler, BackendError, Usage};
use recall_store::{Conversation, MessageStatus, NewConversation, NewMessage};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::chat::ReplySaver;
use crate::mirror::{Continued, Placement};
use crate::{Engine, EngineError};

mod relay;

/// The most bytes of a whole (non-streamed) reply read from the provider.
pub const MAX_WHOLE_REPLY_BYTES: usize = 64 * 1024 * 1024;

/// A provider request as the gateway received it.
#[derive(Debug, Clone)]
pub struct GatewayRequest {
    pub provider: Provider,
    /// The `x-recall-conversation` header: a conversation id, or `None` (or `new`) to create
    /// one; empty is an error.
    pub conversation: Option<String>,
    /// The client's request body.
    pub body: Value,
    /// The policy of a conversation the gateway creates.
    pub new_policy: PolicyOverrides,
}

/// How the request's history was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayMode {
    /// Only what is new was sent; all of it was stored.
    Append,
    /// The whole history was sent; the part not yet stored was stored.
    Mirror,
    /// The same request again after one that got no reply: nothing stored.
    Retry,
    /// The history left the stored one: it went on a fork of the conversation.
    Fork,
}

impl GatewayMode {
    /// `append`, `mirror`, `retry` or `fork` (the `x-recall-mode` response header).
    pub fn name(self) -> &'static str {
        match self {
            GatewayMode::Append => "append",
            GatewayMode::Mirror => "mirror",
            GatewayMode::Retry => "retry",
            GatewayMode::Fork => "fork",
        }
    }
}

/// A request ready to forward: the conversation it runs on and the body for the provider.
#[derive(Debug, Clone)]
pub struct GatewayCall {
    pub provider: Provider,
    /// The conversation the reply is stored in (new, the named one, or a fork of it).
    pub conversation_id: String,
    /// The conversation was created by this request.
    pub created: bool,
    pub mode: GatewayMode,
    /// How many messages this request stored.
    pub stored: usize,
    pub stream: bool,
    /// The model the client asked for.
    pub model: Option<String>,
    /// The JSON body sent to the provider.
    pub body: Vec<u8>,
    /// The selection's figures of the context sent.
    pub stats: Stats,
    summarizes: bool,
    format: recall_core::Format,
    window_first: Option<i64>,
    /// The named conversation's turn, held until the reply is stored (dropped with the call).
    _turn: Option<crate::turns::TurnGuard>,
}

/// What a forwarded request sends the client, in order: the head, then the body's chunks.
#[derive(Debug)]
pub enum GatewayEvent {
    /// The provider's status and the headers the client reads.
    Head {
        status: u16,
        headers: Vec<(HeaderName, HeaderValue)>,
    },
    /// Body bytes as the provider sent them.
    Chunk(Bytes),
    /// The provider's stream broke off: end the client's body with an error.
    Abort,
}

/// How a forwarded request ended.
#[derive(Debug, Clone)]
pub struct GatewayOutcome {
    /// The provider's status (`None`: no response at all).
    pub status: Option<u16>,
    /// The stored reply's seq, when one was stored.
    pub reply_seq: Option<i64>,
    pub reply_status: Option<MessageStatus>,
    pub usage: Usage,
    /// Time from sending to the provider's response head.
    pub upstream_head: Option<Duration>,
    /// Why no response came (connection refused, a timeout), or why the reply is partial.
    pub error: Option<BackendError>,
}

impl Engine {
    /// Reads a provider request, stores what is new in it and builds the body to forward
    /// (see the module docs). `Err` is the client's fault or recall's (a bad body, an
    /// unknown conversation) and nothing is stored; the request is not forwarded.
    pub async fn gateway_prepare(
        &self,
        tenant: &str,
        req: GatewayRequest,
    ) -> Result<GatewayCall, EngineError> {
        let provider = req.provider;
        let (incoming, messages) = self.gateway_messages(provider, req.body)?;
        let named = named_conversation(req.conversation.as_deref())?;
        // A turn on a named conversation waits for one under way there: its history must
        // hold the other's exchange, and its reply must follow its own question.
        let turn = match named {
            Some(id) => Some(self.turns.acquire(tenant, id).await),
            None => None,
        };
        let (conv, window, created) = match named {
            Some(id) => {
                // The conversation and its newest messages (the anchor a mirrored history is
                // matched on) in one read: the window of its last two turns.
                let last_turns = Policy {
                    max_turns: Some(2),
                    ..Policy::default()
                };
                let (conv, window) = self
                    .store
                    .conversation_window(tenant, id, &last_turns)
                    .await?;
                (conv, window.messages, false)
            }
            None => {
                let policy = ConversationPolicy {
                    format: Some(provider.format()),
                    limits: req.new_policy.clone(),
                };
                (
                    self.gateway_new_conversation(tenant, policy).await?,
                    Vec::new(),
                    true,
                )
            }
        };
        let (conv, mode, stored) = self.store_new(tenant, conv, window, &messages).await?;

        let req_context = ContextRequest::new(provider.format());
        let context = self
            // Over the engine's max_context_bytes the request is refused and nothing is
            // forwarded (the new messages stay stored, as when the provider fails; the same
            // request again stores nothing twice).
            .context_of(tenant, &conv, &req_context, self.limits.max_context_bytes)
            .await?;
        let Prompt::Json(rendered) = context.prompt else {
            return Err(EngineError::Invalid(
                "the conversation's context is not in the provider's format".into(),
            ));
        };
        let (stream, model) = (
            incoming.stream,
            incoming
                .rest
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
        );
        let body = forward_body(provider, incoming, rendered);
        let body = serde_json::to_vec(&body)
            .map_err(|e| EngineError::Invalid(format!("cannot encode the request: {e}")))?;
        Ok(GatewayCall {
            provider,
            conversation_id: conv.id,
            created,
            mode,
            stored,
            stream,
            model,
            body,
            stats: context.stats,
            summarizes: context.policy.summarize,
            format: context.format,
            window_first: context.kept.first().map(|k| k.index as i64),
            _turn: turn,
        })
    }

    /// The provider request split into what is forwarded as it is and its history, checked
    /// message by message (each within the size limit).
    fn gateway_messages(
        &self,
        provider: Provider,
        body: Value,
    ) -> Result<(Incoming, Vec<Message>), EngineError> {
        let mut incoming =
            split_request(provider, body).map_err(|e| EngineError::Invalid(e.to_string()))?;
        let parsed = conversation_from_value(
            Value::Array(std::mem::take(&mut incoming.messages)),
            &ParseOptions::strict(),
        )?;
        for m in &parsed.messages {
            self.check_size(&m.message, || format!("messages[{}]", m.index))?;
        }
        Ok((
            incoming,
            parsed.messages.into_iter().map(|m| m.message).collect(),
        ))
    }

    /// The conversation a request without a named one starts, in the provider's format.
    async fn gateway_new_conversation(
        &self,
        tenant: &str,
        policy: ConversationPolicy,
    ) -> Result<Conversation, EngineError> {
        Ok(self
            .store
            .create_conversation(
                tenant,
                NewConversation {
                    title: None,
                    system_prompt: None,
                    metadata: Default::default(),
                    policy: Some(policy),
                },
            )
            .await?)
    }

    /// Places the request's history against the stored one (`window`: its newest messages)
    /// and stores what is new: on `conv`, or on a fork of it where the histories part. The
    /// conversation written to, how, and how many messages were stored.
    async fn store_new(
        &self,
        tenant: &str,
        conv: Conversation,
        window: Vec<HistoryMessage>,
        messages: &[Message],
    ) -> Result<(Conversation, GatewayMode, usize), EngineError> {
        let (conv, mode, new) = match self.place_history(tenant, &conv, window, messages).await? {
            Placement::Continue { mode, from } => {
                let mode = match mode {
                    Continued::Append => GatewayMode::Append,
                    Continued::Mirror => GatewayMode::Mirror,
                    Continued::Retry => GatewayMode::Retry,
                };
                (conv, mode, &messages[from..])
            }
            Placement::Fork { at, from } => {
                let fork = self
                    .store
                    .fork_conversation(tenant, &conv.id, at, recall_store::NewFork { title: None })
                    .await?;
                (fork, GatewayMode::Fork, &messages[from..])
            }
        };
        if new.len() > self.limits.max_messages_per_append {
            return Err(EngineError::Invalid(format!(
                "{} new messages in one request, over the limit of {}",
                new.len(),
                self.limits.max_messages_per_append
            )));
        }
        if !new.is_empty() {
            let rows = new.iter().cloned().map(NewMessage::complete).collect();
            self.store.append(tenant, &conv.id, rows).await?;
            self.appended(tenant, &conv.id);
        }
        Ok((conv, mode, new.len()))
    }

    /// Sends `call` to `upstream` and passes the answer to `sink` as it arrives, storing the
    /// reply: `partial` every [`crate::PARTIAL_SAVE_INTERVAL`] while it streams (the first time
    /// after that interval: a quick reply is written once), then
    /// `complete` (before the client gets the bytes that end it), or `partial` when the
    /// provider's stream breaks or the client goes away (`sink` closed). An error status
    /// passes through with its error type, its message masked ([`Upstream::error_body`]),
    /// and stores nothing. Run it to completion in a task of its own.
    pub async fn gateway_forward(
        &self,
        tenant: &str,
        call: &GatewayCall,
        upstream: &Upstream,
        client_headers: &HeaderMap,
        sink: mpsc::Sender<GatewayEvent>,
    ) -> Result<GatewayOutcome, EngineError> {
        let started = Instant::now();
        let mut outcome = GatewayOutcome {
            status: None,
            reply_seq: None,
            reply_status: None,
            usage: Usage::default(),
            upstream_head: None,
            error: None,
        };
        let resp = match upstream
            .send(call.body.clone(), client_headers, call.stream)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                outcome.error = Some(e);
                return Ok(outcome);
            }
        };
        outcome.status = Some(resp.status);
        outcome.upstream_head = Some(started.elapsed());
        if !(200..300).contains(&resp.status) {
            relay::pass_error(resp, upstream, &sink).await;
            return Ok(outcome);
        }
        let client_gone = sink
            .send(GatewayEvent::Head {
                status: resp.status,
                headers: resp.headers.clone(),
            })
            .await
            .is_err();
        let mut relay = relay::Relay {
            engine: self,
            call,
            upstream,
            sink: &sink,
            saver: ReplySaver::named(
                self,
                tenant,
                &call.conversation_id,
                call.provider.name(),
                call.model.clone(),
            )
            .deferred(),
            assembler: Assembler::new(),
            outcome,
        };
        if call.stream {
            relay.stream(resp.body, client_gone).await?;
        } else {
            relay.whole(resp.body).await?;
        }
        let outcome = relay.outcome;
        self.appended(tenant, &call.conversation_id);
        if call.summarizes && outcome.reply_status == Some(MessageStatus::Complete) {
            self.compact_after_turn(
                tenant,
                &call.conversation_id,
                call.format,
                &PolicyOverrides::default(),
                &call.stats,
                call.window_first,
            );
        }
        Ok(outcome)
    }
}

/// The conversation the `x-recall-conversation` header names: `None` for a new one (no
/// header, or `new`); empty is an error.
fn named_conversation(header: Option<&str>) -> Result<Option<&str>, EngineError> {
    match header.map(str::trim) {
        None | Some("new") => Ok(None),
        // Most often an unset variable in the client's code: a new conversation for each
        // request would forget silently.
        Some("") => Err(EngineError::Invalid(
            "the x-recall-conversation header is empty: send a conversation id, or `new` (or \
             no header) for a new conversation"
                .into(),
        )),
        Some(id) => Ok(Some(id)),
    }
}
