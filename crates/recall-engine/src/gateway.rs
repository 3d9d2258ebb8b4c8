//! The gateway turn (issue 17): a provider request from an official SDK (Anthropic Messages,
//! OpenAI chat completions) on a stored conversation. What is new in the request is stored
//! (append or mirror, recall-core's `gateway::match_history`), the context is built with the
//! conversation's policy (window, recall, summary) and put in the client's request in place
//! of its history, the request goes to the provider, and the reply is passed back byte for
//! byte while it is read into the message stored (`partial` while it streams and when the
//! client or the provider goes away).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use recall_core::context::ContextRequest;
use recall_core::gateway::{forward_body, split_request, Provider};
use recall_core::message::Message;
use recall_core::parse::{conversation_from_value, ParseOptions};
use recall_core::policy::{ConversationPolicy, Policy, PolicyOverrides};
use recall_core::select::Stats;
use recall_core::Prompt;
use recall_llm::proxy::{HeaderMap, HeaderName, HeaderValue, ReplyTap, Upstream};
use recall_llm::{Assembler, BackendError, BackendErrorKind, BackendEvent, Usage};
use recall_store::{MessageStatus, NewConversation, NewMessage};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::chat::ReplySaver;
use crate::mirror::{Continued, Placement};
use crate::{Engine, EngineError};

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
    /// The largest context forwarded, as the context route bounds its answers
    /// ([`Engine::context_within`]): over it the request is refused with
    /// [`EngineError::ContextTooLarge`] and nothing is forwarded (the new messages stay
    /// stored, as when the provider fails; the same request again stores nothing twice).
    pub max_context_bytes: Option<usize>,
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
        let mut incoming =
            split_request(provider, req.body).map_err(|e| EngineError::Invalid(e.to_string()))?;
        let parsed = conversation_from_value(
            Value::Array(std::mem::take(&mut incoming.messages)),
            &ParseOptions::strict(),
        )?;
        for m in &parsed.messages {
            self.check_size(&m.message, || format!("messages[{}]", m.index))?;
        }
        let messages: Vec<Message> = parsed.messages.into_iter().map(|m| m.message).collect();

        let named = match req.conversation.as_deref().map(str::trim) {
            None | Some("new") => None,
            // Most often an unset variable in the client's code: a new conversation for each
            // request would forget silently.
            Some("") => {
                return Err(EngineError::Invalid(
                    "the x-recall-conversation header is empty: send a conversation id, or \
                     `new` (or no header) for a new conversation"
                        .into(),
                ))
            }
            Some(id) => Some(id),
        };
        // The conversation and its newest messages (the anchor a mirrored history is matched
        // on) in one read: the window of its last two turns.
        // A turn on a named conversation waits for one under way there: its history must
        // hold the other's exchange, and its reply must follow its own question.
        let turn = match named {
            Some(id) => Some(self.turns.acquire(tenant, id).await),
            None => None,
        };
        let (mut conv, window, created) = match named {
            Some(id) => {
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
                let conv = self
                    .store
                    .create_conversation(
                        tenant,
                        NewConversation {
                            title: None,
                            system_prompt: None,
                            metadata: Default::default(),
                            policy: Some(ConversationPolicy {
                                format: Some(provider.format()),
                                limits: req.new_policy.clone(),
                            }),
                        },
                    )
                    .await?;
                (conv, Vec::new(), true)
            }
        };
        let (mode, new) = match self.place_history(tenant, &conv, window, &messages).await? {
            Placement::Continue { mode, from } => {
                let mode = match mode {
                    Continued::Append => GatewayMode::Append,
                    Continued::Mirror => GatewayMode::Mirror,
                    Continued::Retry => GatewayMode::Retry,
                };
                (mode, &messages[from..])
            }
            Placement::Fork { at, from } => {
                conv = self
                    .store
                    .fork_conversation(tenant, &conv.id, at, recall_store::NewFork { title: None })
                    .await?;
                (GatewayMode::Fork, &messages[from..])
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

        let req_context = ContextRequest::new(provider.format());
        let context = match req.max_context_bytes {
            Some(limit) => {
                self.context_within(tenant, &conv.id, &req_context, Some(limit))
                    .await?
            }
            None => self.context_of(tenant, &conv, &req_context).await?,
        };
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
            stored: new.len(),
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
        let resp = match upstream
            .send(call.body.clone(), client_headers, call.stream)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                return Ok(GatewayOutcome {
                    status: None,
                    reply_seq: None,
                    reply_status: None,
                    usage: Usage::default(),
                    upstream_head: None,
                    error: Some(e),
                })
            }
        };
        let head = started.elapsed();
        let status = resp.status;
        let mut outcome = GatewayOutcome {
            status: Some(status),
            reply_seq: None,
            reply_status: None,
            usage: Usage::default(),
            upstream_head: Some(head),
            error: None,
        };
        let mut body = resp.body;
        if !(200..300).contains(&status) {
            // The provider's error: its status and error type pass through, its message only
            // with every credential masked (a provider may echo the operator's key); nothing
            // of a reply to store.
            let mut read = Vec::new();
            while let Some(Ok(chunk)) = body.next().await {
                let room = recall_llm::proxy::MAX_ERROR_BODY_BYTES.saturating_sub(read.len());
                read.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if room <= chunk.len() {
                    break;
                }
            }
            let mut headers: Vec<(HeaderName, HeaderValue)> = resp
                .headers
                .into_iter()
                .filter(|(n, _)| n.as_str() != "content-type")
                .collect();
            headers.push((
                HeaderName::from_static("content-type"),
                HeaderValue::from_static("application/json"),
            ));
            if sink
                .send(GatewayEvent::Head { status, headers })
                .await
                .is_ok()
            {
                let masked = upstream.error_body(status, &read);
                let _ = sink.send(GatewayEvent::Chunk(Bytes::from(masked))).await;
            }
            return Ok(outcome);
        }
        let client_gone = sink
            .send(GatewayEvent::Head {
                status,
                headers: resp.headers.clone(),
            })
            .await
            .is_err();

        let mut saver = ReplySaver::named(
            self,
            tenant,
            &call.conversation_id,
            call.provider.name(),
            call.model.clone(),
        )
        .deferred();
        let mut assembler = Assembler::new();
        let cap = self.limits.max_message_bytes;
        if call.stream {
            let mut tap = ReplyTap::new(call.provider);
            let mut gone = client_gone;
            // Content bytes of the reply so far: past `max_message_bytes` the reply is cut
            // at the last chunk that fits, which is what the client got and what is stored.
            let mut size = 0usize;
            while !gone {
                let (events, chunk) = match body.next().await {
                    None => (tap.finish(), None),
                    Some(Err(e)) => {
                        let _ = sink.send(GatewayEvent::Abort).await;
                        (tap.fail_with(e), None)
                    }
                    Some(Ok(chunk)) => (tap.feed(&chunk), Some(chunk)),
                };
                let added: usize = events.iter().map(BackendEvent::content_bytes).sum();
                // A chunk the tap cannot read (a malformed event) or one that would take the
                // reply past `max_message_bytes` is not passed on, nor is any of its content
                // stored: the client is told why in the provider's stream format, and what
                // it got before is what is stored, as partial.
                let malformed = chunk.is_some().then(|| {
                    events.iter().find_map(|e| match e {
                        BackendEvent::Error(e) => Some(e.clone()),
                        _ => None,
                    })
                });
                let stop = match malformed.flatten() {
                    Some(e) => Some(BackendError::protocol(format!(
                        "the provider's stream could not be read ({e}): recall stored the \
                         reply up to there, as partial, and stopped passing it on"
                    ))),
                    None if size + added > cap => Some(BackendError::protocol(format!(
                        "the reply is over max_message_bytes ({cap} bytes): recall stored it \
                         up to there, as partial, and stopped reading it"
                    ))),
                    None => None,
                };
                if let Some(why) = stop {
                    let _ = sink
                        .send(GatewayEvent::Chunk(Bytes::from(
                            upstream.stream_error(&why.to_string()),
                        )))
                        .await;
                    tap.fail_with(why.clone());
                    assembler.push(&BackendEvent::Error(why));
                    self.save_reply(&mut saver, &mut assembler, &mut outcome)
                        .await?;
                    break;
                }
                size += added;
                for ev in &events {
                    assembler.push(ev);
                }
                if tap.is_finished() {
                    // Stored before the client sees the end of the reply.
                    self.save_reply(&mut saver, &mut assembler, &mut outcome)
                        .await?;
                    if let Some(chunk) = chunk {
                        let _ = sink.send(GatewayEvent::Chunk(chunk)).await;
                    }
                    // What follows the end (OpenAI's `[DONE]`) is passed on as well.
                    while let Some(Ok(rest)) = body.next().await {
                        if sink.send(GatewayEvent::Chunk(rest)).await.is_err() {
                            break;
                        }
                    }
                    break;
                }
                if let Some(chunk) = chunk {
                    gone = sink.send(GatewayEvent::Chunk(chunk)).await.is_err();
                }
                if assembler.has_content() && saver.due() && !gone {
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
            if !tap.is_finished() {
                // The client went away: stop reading and keep what arrived.
                for ev in tap.fail_with(BackendError::new(BackendErrorKind::Cancelled)) {
                    assembler.push(&ev);
                }
                self.save_reply(&mut saver, &mut assembler, &mut outcome)
                    .await?;
            }
        } else {
            let mut whole = Vec::new();
            let mut broken = None;
            while let Some(chunk) = body.next().await {
                match chunk {
                    Ok(c) if whole.len() + c.len() <= MAX_WHOLE_REPLY_BYTES => {
                        whole.extend_from_slice(&c)
                    }
                    Ok(_) => {
                        broken = Some(BackendError::protocol(format!(
                            "the provider's reply is over {MAX_WHOLE_REPLY_BYTES} bytes"
                        )));
                        break;
                    }
                    Err(e) => {
                        broken = Some(e);
                        break;
                    }
                }
            }
            let mut events = match broken {
                Some(e) => vec![BackendEvent::Error(e)],
                None => ReplyTap::whole(call.provider, &whole),
            };
            // Past `max_message_bytes`, what fits is stored as partial and the client's body
            // breaks off (it got no whole reply either).
            let mut size = 0usize;
            if let Some(over) = events.iter().position(|ev| {
                size += ev.content_bytes();
                size > cap
            }) {
                events.truncate(over);
                events.push(BackendEvent::Error(BackendError::protocol(format!(
                    "the reply is over max_message_bytes ({cap} bytes): recall stored it up \
                     to there, as partial"
                ))));
            }
            for ev in &events {
                assembler.push(ev);
            }
            self.save_reply(&mut saver, &mut assembler, &mut outcome)
                .await?;
            if outcome.error.is_some() {
                let _ = sink.send(GatewayEvent::Abort).await;
            } else {
                let _ = sink.send(GatewayEvent::Chunk(Bytes::from(whole))).await;
            }
        }
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

    /// Saves what the assembler holds as the reply (complete or partial) into `outcome`.
    async fn save_reply(
        &self,
        saver: &mut ReplySaver<'_>,
        assembler: &mut Assembler,
        outcome: &mut GatewayOutcome,
    ) -> Result<(), EngineError> {
        let reply = std::mem::replace(assembler, Assembler::new()).finish();
        let status = saver.finish(&reply).await?;
        if saver.seq.is_some() {
            outcome.reply_status = Some(status);
        }
        outcome.reply_seq = saver.seq;
        outcome.usage = reply.usage;
        outcome.error = reply.error;
        Ok(())
    }
}
