//! The answer of a forwarded gateway request on its way back to the client
//! ([`Engine::gateway_forward`]): an error status passed through masked, a stream relayed
//! chunk by chunk while its reply is stored, or a whole answer read, stored and sent.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use recall_llm::proxy::{HeaderName, HeaderValue, ReplyTap, Upstream, UpstreamResponse};
use recall_llm::{Assembler, BackendError, BackendErrorKind, BackendEvent, ReplyMeter};
use recall_store::MessageStatus;
use tokio::sync::mpsc;

use super::{GatewayCall, GatewayEvent, GatewayOutcome, MAX_WHOLE_REPLY_BYTES};
use crate::chat::ReplySaver;
use crate::{Engine, EngineError};

/// The provider's answer body.
type Body = BoxStream<'static, Result<Bytes, BackendError>>;

/// The provider's error: its status and error type pass through, its message only with every
/// credential masked (a provider may echo the operator's key); nothing of a reply to store.
pub(super) async fn pass_error(
    resp: UpstreamResponse,
    upstream: &Upstream,
    sink: &mpsc::Sender<GatewayEvent>,
) {
    let mut body = resp.body;
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
    let status = resp.status;
    if sink
        .send(GatewayEvent::Head { status, headers })
        .await
        .is_ok()
    {
        let masked = upstream.error_body(status, &read);
        let _ = sink.send(GatewayEvent::Chunk(Bytes::from(masked))).await;
    }
}

/// A successful answer being relayed: what is passed on, what is stored, and the outcome.
pub(super) struct Relay<'a> {
    pub(super) engine: &'a Engine,
    pub(super) call: &'a GatewayCall,
    pub(super) upstream: &'a Upstream,
    pub(super) sink: &'a mpsc::Sender<GatewayEvent>,
    pub(super) saver: ReplySaver<'a>,
    pub(super) assembler: Assembler,
    pub(super) outcome: GatewayOutcome,
}

impl Relay<'_> {
    /// A streamed answer: each chunk is read into the reply and passed on (the reply's end is
    /// stored before the client gets it); a partial reply is saved as it grows. The client
    /// going away stops the reading and keeps what arrived.
    pub(super) async fn stream(
        &mut self,
        mut body: Body,
        client_gone: bool,
    ) -> Result<(), EngineError> {
        let mut tap = ReplyTap::new(self.call.provider);
        let mut gone = client_gone;
        // Past `max_message_bytes` (content, and tool input still streaming) the reply is cut
        // at the last chunk that fits, which is what the client got and what is stored.
        let mut meter = ReplyMeter::new(self.engine.limits.max_message_bytes);
        while !gone {
            let (events, chunk) = match body.next().await {
                None => (tap.finish(), None),
                Some(Err(e)) => {
                    let _ = self.sink.send(GatewayEvent::Abort).await;
                    (tap.fail_with(e), None)
                }
                Some(Ok(chunk)) => (tap.feed(&chunk), Some(chunk)),
            };
            let pending = tap.pending_bytes();
            if let Some(why) = refused(&events, chunk.is_some(), &mut meter, pending) {
                // Not passed on, nor any of its content stored: the client is told why in the
                // provider's stream format, and what it got before is stored, as partial.
                let _ = self
                    .sink
                    .send(GatewayEvent::Chunk(Bytes::from(
                        self.upstream.stream_error(&why.to_string()),
                    )))
                    .await;
                tap.fail_with(why.clone());
                self.assembler.push(&BackendEvent::Error(why));
                return self.save().await;
            }
            for ev in &events {
                self.assembler.push(ev);
            }
            if tap.is_finished() {
                // Stored before the client sees the end of the reply.
                self.save().await?;
                if let Some(chunk) = chunk {
                    let _ = self.sink.send(GatewayEvent::Chunk(chunk)).await;
                }
                // What follows the end (OpenAI's `[DONE]`) is passed on as well.
                while let Some(Ok(rest)) = body.next().await {
                    if self.sink.send(GatewayEvent::Chunk(rest)).await.is_err() {
                        break;
                    }
                }
                return Ok(());
            }
            if let Some(chunk) = chunk {
                gone = self.sink.send(GatewayEvent::Chunk(chunk)).await.is_err();
            }
            if self.assembler.has_content() && self.saver.due() && !gone {
                self.saver
                    .save(
                        &self.assembler.message(),
                        MessageStatus::Partial,
                        &self.assembler.usage(),
                        None,
                        None,
                    )
                    .await?;
            }
        }
        // The client went away: stop reading and keep what arrived.
        for ev in tap.fail_with(BackendError::new(BackendErrorKind::Cancelled)) {
            self.assembler.push(&ev);
        }
        self.save().await
    }

    /// An answer that is not streamed: read whole (up to [`MAX_WHOLE_REPLY_BYTES`]), stored,
    /// then sent. Past `max_message_bytes`, what fits is stored as partial and the client's
    /// body breaks off (it got no whole reply either).
    pub(super) async fn whole(&mut self, mut body: Body) -> Result<(), EngineError> {
        let cap = self.engine.limits.max_message_bytes;
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
            None => ReplyTap::whole(self.call.provider, &whole),
        };
        if let Some(over) = ReplyMeter::new(cap).cut(&mut events, 0) {
            events.push(BackendEvent::Error(over));
        }
        for ev in &events {
            self.assembler.push(ev);
        }
        self.save().await?;
        if self.outcome.error.is_some() {
            let _ = self.sink.send(GatewayEvent::Abort).await;
        } else {
            let _ = self
                .sink
                .send(GatewayEvent::Chunk(Bytes::from(whole)))
                .await;
        }
        Ok(())
    }

    /// Saves what the assembler holds as the reply (complete or partial) into the outcome.
    async fn save(&mut self) -> Result<(), EngineError> {
        let reply = std::mem::replace(&mut self.assembler, Assembler::new()).finish();
        let status = self.saver.finish(&reply).await?;
        if self.saver.seq.is_some() {
            self.outcome.reply_status = Some(status);
        }
        self.outcome.reply_seq = self.saver.seq;
        self.outcome.usage = reply.usage;
        self.outcome.error = reply.error;
        Ok(())
    }
}

/// Why a streamed chunk is not passed on: the tap could not read it (a malformed event), or
/// its events, with the tool input still streaming (`pending`), take the reply past the
/// meter's cap.
fn refused(
    events: &[BackendEvent],
    read: bool,
    meter: &mut ReplyMeter,
    pending: usize,
) -> Option<BackendError> {
    let malformed = read
        .then(|| {
            events.iter().find_map(|e| match e {
                BackendEvent::Error(e) => Some(e.clone()),
                _ => None,
            })
        })
        .flatten();
    if let Some(e) = malformed {
        return Some(BackendError::protocol(format!(
            "the provider's stream could not be read ({e}): recall stored the reply up to \
             there, as partial, and stopped passing it on"
        )));
    }
    events
        .iter()
        .try_for_each(|e| meter.admit(e, pending))
        .and_then(|()| meter.holds(pending))
        .err()
}
