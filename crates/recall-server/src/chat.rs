//! Chat over HTTP: `POST …/chat` streams a turn as server-sent events, `GET …/ws` runs turns
//! over a WebSocket with the same events as JSON frames. The turn itself is the engine's
//! ([`recall_engine::Engine::chat_turn`]); it runs in a task of its own so that a client that
//! goes away cancels it (the reply is then stored as `partial`) instead of dropping it.
//!
//! `POST …/retry` and `…/edit` run `retry_turn` and `edit_turn` the same way. The four bodies
//! (chat, retry, edit, a WebSocket `user_message`) flatten one `TurnOptions`: the backend, the
//! model, `max_output_tokens` and the policy fields.

use std::convert::Infallible;

use axum::extract::ws::{
    close_code, CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade,
};
use axum::extract::{Extension, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use recall_core::policy::PolicyOverrides;
use recall_engine::llm::BackendEvent;
use recall_engine::{ChatTurn, ConversationRef, EngineError, TurnEvent, TurnOutcome};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use utoipa::ToSchema;

use crate::auth::Tenant;
use crate::body::{from_value, parse_json, ConversationId, RawBody};
use crate::error::ApiError;
use crate::state::AppState;

/// What every chat body takes besides its message (`POST …/chat`, `…/retry`, `…/edit` and a
/// WebSocket `user_message`): the backend, the model, the reply limit and the context policy.
/// A field added here reaches all four.
#[derive(Debug, Clone, Default, ToSchema)]
pub struct TurnOptions {
    /// A backend name this server offers (default: its first).
    pub backend: Option<String>,
    pub model: Option<String>,
    /// The most tokens the reply may have (default 4096).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 4294967295_i64)]
    pub max_output_tokens: Option<u32>,
    /// The context's limits over the backend format's defaults and the conversation's policy,
    /// as in `POST …/context`: `max_tokens` is the history budget (it was the reply limit in
    /// chat bodies before 2026-11-29; the reply limit is `max_output_tokens`).
    #[serde(flatten)]
    pub policy: PolicyOverrides,
}

// By hand rather than derived: flattened into each body, a derived reader's errors would lose
// the field's name ("invalid type: integer `3`, expected a string"); each error here starts
// with it, as `PolicyOverrides`'s do. What is not one of these three is the policy's, which
// refuses what is not a policy field.
impl<'de> Deserialize<'de> for TurnOptions {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        fn take<T: serde::de::DeserializeOwned, E: Error>(
            map: &mut serde_json::Map<String, Value>,
            key: &str,
        ) -> Result<Option<T>, E> {
            match map.remove(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => serde_json::from_value(v)
                    .map(Some)
                    .map_err(|e| E::custom(format!("{key}: {e}"))),
            }
        }
        let mut map = serde_json::Map::<String, Value>::deserialize(d)?;
        Ok(TurnOptions {
            backend: take(&mut map, "backend")?,
            model: take(&mut map, "model")?,
            max_output_tokens: take(&mut map, "max_output_tokens")?,
            // The trait's reading (the inherent `deserialize` is the derived one, whose errors
            // do not name their field).
            policy: <PolicyOverrides as Deserialize>::deserialize(Value::Object(map))
                .map_err(D::Error::custom)?,
        })
    }
}

/// `POST …/chat`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
// No `deny_unknown_fields`: see `TurnOptions`.
pub struct ChatBody {
    /// The user's message: a string or content blocks.
    #[schema(schema_with = crate::views::user_content)]
    pub content: Value,
    /// Client id of the user message (a repeat is a 409: the turn ran already).
    pub id: Option<String>,
    #[serde(flatten)]
    pub options: TurnOptions,
}

/// `POST …/retry`: regenerate the reply at `seq` on a fork made just before it, or answer the
/// unanswered user message at `seq` in place.
#[derive(Debug, Clone, Deserialize, ToSchema)]
// No `deny_unknown_fields`: see `TurnOptions`.
pub struct RetryBody {
    /// The seq of the assistant reply to regenerate, or of the user message that ends the
    /// conversation unanswered (its reply failed before any text).
    #[schema(minimum = 1)]
    pub seq: i64,
    #[serde(flatten)]
    pub options: TurnOptions,
}

/// `POST …/edit`: replace the user message at `seq` on a fork made just before it, and
/// run a chat turn there.
#[derive(Debug, Clone, Deserialize, ToSchema)]
// No `deny_unknown_fields`: see `TurnOptions`.
pub struct EditBody {
    /// The seq of the user message to replace.
    #[schema(minimum = 1)]
    pub seq: i64,
    /// The new message: a string or content blocks.
    #[schema(schema_with = crate::views::user_content)]
    pub content: Value,
    /// Client id of the new user message.
    pub id: Option<String>,
    #[serde(flatten)]
    pub options: TurnOptions,
}

/// What a turn does: a plain chat turn, or a retry or an edit of the message at a seq (on a
/// fork of the conversation).
#[derive(Debug, Clone, Copy)]
enum TurnKind {
    Chat,
    Retry(i64),
    Edit(i64),
}

/// One event of a turn, as sent to the client: its name and JSON data.
type Frame = (&'static str, Value);

/// What the turn task reports. A client that reads nothing leaves every event of the reply
/// queued here until the write timeout closes its connection, and a fast backend sends
/// tens of thousands of text deltas in that time: a delta is its own small variant (32
/// bytes and its text), where a `TurnEvent` inline made every queued delta about 200 bytes.
enum Report {
    /// A text delta of the reply.
    Text(String),
    // Boxed: large, and few.
    Event(Box<TurnEvent>),
    // Boxed: sent once per turn.
    Finished(Box<Result<TurnOutcome, EngineError>>),
}

/// A turn running in its own task; dropping this cancels it (the reply is saved as partial).
struct RunningTurn {
    rx: mpsc::UnboundedReceiver<Report>,
    backend: String,
    /// The model the request named (`None`: the backend's default).
    model: Option<String>,
    state: AppState,
    _cancel: DropGuard,
}

/// Starts a turn; answers an error right away when the turn fails before anything was sent
/// (unknown conversation, invalid message, repeated client id).
async fn start_turn(
    state: &AppState,
    tenant: String,
    id: String,
    body: ChatBody,
) -> Result<(RunningTurn, Report), ApiError> {
    start_turn_of(state, tenant, id, body, TurnKind::Chat).await
}

/// [`start_turn`] for any kind of turn.
async fn start_turn_of(
    state: &AppState,
    tenant: String,
    id: String,
    body: ChatBody,
    kind: TurnKind,
) -> Result<(RunningTurn, Report), ApiError> {
    let o = body.options;
    let (name, backend) = state.inner.upstreams.backends.pick(o.backend.as_deref())?;
    let model = o.model.clone();
    let turn = ChatTurn {
        content: body.content,
        client_id: body.id,
        model: o.model,
        max_output_tokens: o.max_output_tokens,
        overrides: o.policy,
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let engine = state.engine().clone();
    let token = cancel.clone();
    tokio::spawn(async move {
        let events = tx.clone();
        let on_event = move |ev| {
            let report = match ev {
                TurnEvent::Backend(BackendEvent::TextDelta(d)) => Report::Text(d),
                other => Report::Event(Box::new(other)),
            };
            let _ = events.send(report);
        };
        let b = backend.as_ref();
        let result = match kind {
            TurnKind::Chat => {
                engine
                    .chat_turn(ConversationRef::new(&tenant, &id), b, turn, token, on_event)
                    .await
            }
            TurnKind::Retry(seq) => engine
                .retry_turn(
                    ConversationRef::new(&tenant, &id),
                    seq,
                    b,
                    turn,
                    token,
                    on_event,
                )
                .await
                .map(|r| r.outcome),
            TurnKind::Edit(seq) => engine
                .edit_turn(
                    ConversationRef::new(&tenant, &id),
                    seq,
                    b,
                    turn,
                    token,
                    on_event,
                )
                .await
                .map(|r| r.outcome),
        };
        let _ = tx.send(Report::Finished(Box::new(result)));
    });
    let first = rx.recv().await.ok_or_else(ApiError::internal)?;
    let first = match first {
        Report::Finished(r) => match *r {
            Err(e) => return Err(ApiError::from(e)),
            ok => Report::Finished(Box::new(ok)),
        },
        other => other,
    };
    Ok((
        RunningTurn {
            rx,
            backend: name,
            model,
            state: state.clone(),
            _cancel: cancel.drop_guard(),
        },
        first,
    ))
}

impl RunningTurn {
    /// The client frame of a report, if it has one; `None` also after the last.
    fn frame(&self, report: Report) -> Option<Frame> {
        let event = match report {
            Report::Text(d) => return Some(("assistant_chunk", json!({ "delta": d }))),
            Report::Event(event) => *event,
            Report::Finished(r) => return self.finished(*r),
        };
        match event {
            TurnEvent::Backend(ev) => match ev {
                BackendEvent::TextDelta(d) => Some(("assistant_chunk", json!({ "delta": d }))),
                BackendEvent::ToolUse { id, name, input } => {
                    Some(("tool_use", json!({"id": id, "name": name, "input": input})))
                }
                BackendEvent::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => Some((
                    "tool_result",
                    json!({"tool_use_id": tool_use_id, "content": content, "is_error": is_error}),
                )),
                // Errors and the end are reported once the reply is stored.
                _ => None,
            },
            TurnEvent::UserStored { seq } => Some(("user_stored", json!({ "seq": seq }))),
            TurnEvent::ContextBuilt { .. } => None,
            TurnEvent::Forked { conversation_id } => {
                Some(("forked", json!({ "conversation_id": conversation_id })))
            }
        }
    }

    /// The client frame of the turn's end.
    fn finished(&self, result: Result<TurnOutcome, EngineError>) -> Option<Frame> {
        match result {
            Ok(o) => Some(match &o.error {
                None => (
                    "done",
                    json!({"message_id": o.reply_seq, "user_message_id": o.user_seq,
                       "usage": o.usage, "stop_reason": o.stop_reason,
                       "backend": self.backend, "model": self.model}),
                ),
                Some(e) => {
                    self.state.inner.metrics.backend_error(&self.backend);
                    (
                        "error",
                        json!({"message": e.to_string(), "message_id": o.reply_seq,
                           "status": o.status}),
                    )
                }
            }),
            Err(e) => {
                let err = ApiError::from(e);
                Some(("error", json!({"message": err.message})))
            }
        }
    }
}

/// Send a message and stream the reply as server-sent events: `user_stored` {"seq"},
/// `assistant_chunk` {"delta"}, `tool_use`, `tool_result`, then `done` {"message_id",
/// "usage"} or `error` {"message"}. A client that disconnects mid-stream leaves the reply
/// stored as `partial`.
#[utoipa::path(post, path = "/v1/conversations/{id}/chat", tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = ChatBody,
    responses((status = 200, description = "text/event-stream of the turn's events"),
        (status = 404, body = crate::views::ErrorBody), (status = 409, body = crate::views::ErrorBody),
        (status = 503, body = crate::views::ErrorBody), crate::views::V1Errors),
    security(("bearer" = [])))]
pub async fn chat_sse(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let body: ChatBody = parse_json(&body)?;
    let (turn, first) = start_turn(&state, tenant, id, body).await?;
    Ok(Sse::new(sse_stream(turn, first))
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Regenerate the reply at `seq`: the conversation is forked just before it and the reply is
/// streamed on the fork as `chat` streams one, after a `forked` {"conversation_id"} event.
/// The old reply stays on the original conversation, an alternative of the new one
/// (`GET …/messages/{seq}/alternatives`). When `seq` is a user message that ends the
/// conversation (its reply failed before any text was stored), the reply is streamed on the
/// conversation itself, with no fork and no `forked` event.
#[utoipa::path(post, path = "/v1/conversations/{id}/retry", tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = RetryBody,
    responses((status = 200, description = "text/event-stream: forked, then the turn's events"),
        (status = 404, body = crate::views::ErrorBody), (status = 503, body = crate::views::ErrorBody),
        crate::views::V1Errors),
    security(("bearer" = [])))]
pub async fn retry_sse(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let b: RetryBody = parse_json(&body)?;
    let chat = ChatBody {
        content: Value::Null,
        id: None,
        options: b.options,
    };
    let (turn, first) = start_turn_of(&state, tenant, id, chat, TurnKind::Retry(b.seq)).await?;
    Ok(Sse::new(sse_stream(turn, first))
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Edit the user message at `seq`: the conversation is forked just before it, the new
/// message is stored there and the reply streams as `chat` streams one, after a `forked`
/// {"conversation_id"} event. The old message and what followed stay on the original.
#[utoipa::path(post, path = "/v1/conversations/{id}/edit", tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    request_body = EditBody,
    responses((status = 200, description = "text/event-stream: forked, then the turn's events"),
        (status = 404, body = crate::views::ErrorBody), (status = 503, body = crate::views::ErrorBody),
        crate::views::V1Errors),
    security(("bearer" = [])))]
pub async fn edit_sse(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let b: EditBody = parse_json(&body)?;
    let chat = ChatBody {
        content: b.content,
        id: b.id,
        options: b.options,
    };
    let (turn, first) = start_turn_of(&state, tenant, id, chat, TurnKind::Edit(b.seq)).await?;
    Ok(Sse::new(sse_stream(turn, first))
        .keep_alive(KeepAlive::default())
        .into_response())
}

fn sse_stream(turn: RunningTurn, first: Report) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold(
        (turn, Some(first), false),
        |(mut turn, mut pending, done)| async move {
            if done {
                return None;
            }
            loop {
                let report = match pending.take() {
                    Some(r) => r,
                    None => turn.rx.recv().await?,
                };
                let last = matches!(report, Report::Finished(_));
                if let Some((name, data)) = turn.frame(report) {
                    let ev = Event::default().event(name).data(data.to_string());
                    return Some((Ok(ev), (turn, None, last)));
                }
                if last {
                    return None;
                }
            }
        },
    )
}

/// A WebSocket for chat: send `{"type":"user_message","content","request_id"}` (optionally
/// `backend`, `model`, `id`); every event of the turn comes back as a JSON frame with its
/// `type` and the `request_id`. Closing the socket mid-turn leaves the reply `partial`.
#[utoipa::path(get, path = "/v1/conversations/{id}/ws", tag = "chat",
    params(("id" = String, Path, description = "The conversation id")),
    responses((status = 101, description = "WebSocket upgrade"), (status = 404, body = crate::views::ErrorBody),
        (status = 503, description = "As many WebSockets are open as the server takes (half of max_connections)", body = crate::views::ErrorBody),
        crate::views::V1Errors),
    security(("bearer" = [])))]
pub async fn chat_ws(
    State(state): State<AppState>,
    Extension(Tenant(tenant)): Extension<Tenant>,
    ConversationId(id): ConversationId,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    // Refuse unknown (or another tenant's) conversations before upgrading.
    state
        .engine()
        .get_conversation(ConversationRef::new(&tenant, &id))
        .await?;
    // WebSockets hold at most half of the connection places: refused before the upgrade
    // when those are taken, as a connection over the cap is.
    let Ok(place) = state.inner.ws_places.clone().try_acquire_owned() else {
        let places = crate::state::websocket_places(state.inner.config.limits.max_connections);
        return Err(ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!(
                    "{places} WebSockets are open, as many as this server takes (half of \
                     max_connections); try again when one closes"
                ),
            )
        });
    };
    // A frame or message over the body limit is refused from its header, before its payload
    // is read (the socket is then closed with 1009).
    let limit = state.inner.config.limits.max_body_bytes;
    Ok(ws
        .max_frame_size(limit)
        .max_message_size(limit)
        .on_upgrade(move |socket| async move {
            ws_session(socket, state, tenant, id).await;
            drop(place);
        }))
}

/// Ends a session whose read failed: a frame or message over the limit is told so with close
/// code 1009 (message too big); other failures (a broken connection, a protocol error) just
/// end it.
async fn read_failed(socket: &mut WebSocket, error: axum::Error) {
    let too_big = error
        .into_inner()
        .downcast::<tungstenite::Error>()
        .ok()
        .and_then(|e| match *e {
            tungstenite::Error::Capacity(tungstenite::error::CapacityError::MessageTooLong {
                size,
                max_size,
            }) => Some(format!(
                "message of {size} bytes over the limit of {max_size}"
            )),
            _ => None,
        });
    if let Some(reason) = too_big {
        let frame = CloseFrame {
            code: close_code::SIZE,
            reason: reason.into(),
        };
        let _ = socket.send(WsMessage::Close(Some(frame))).await;
    }
}

/// A WebSocket request: `{"type": "user_message", "request_id": …}` and the fields of a
/// [`ChatBody`].
#[derive(Debug)]
struct WsRequest {
    kind: String,
    request_id: Option<Value>,
    body: ChatBody,
}

impl WsRequest {
    /// Reads a frame as strictly as a chat body (the body's fields are read by the same
    /// type, so their errors name them the same way).
    fn parse(text: &[u8]) -> Result<WsRequest, ApiError> {
        let Value::Object(mut o) = parse_json::<Value>(text)? else {
            return Err(ApiError::invalid(
                "invalid request body: expected a JSON object",
            ));
        };
        let request_id = o.remove("request_id");
        let kind = match o.remove("type") {
            Some(Value::String(k)) => k,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "invalid request body at type: expected a string, got {other}"
                )))
            }
            None => {
                return Err(ApiError::invalid(
                    "invalid request body: missing field `type`",
                ))
            }
        };
        let body = from_value(Value::Object(o))?;
        Ok(WsRequest {
            kind,
            request_id,
            body,
        })
    }
}

/// The next frame of a session with no turn running, or `None` when the session is over: the
/// client closed it, or sent no request for `idle` (then it is closed with 1001, "going
/// away"). Pings, pongs and binary frames are answered or ignored and do not count: a client
/// that only keeps the socket alive would otherwise hold its place for ever.
async fn next_frame(
    socket: &mut WebSocket,
    idle: std::time::Duration,
) -> Option<Result<WsMessage, axum::Error>> {
    let deadline = tokio::time::Instant::now() + idle;
    loop {
        tokio::select! {
            msg = socket.recv() => match msg {
                Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Binary(_))) => continue,
                other => return other,
            },
            _ = tokio::time::sleep_until(deadline) => {
                let frame = CloseFrame {
                    code: close_code::AWAY,
                    reason: format!("no request for {}s", idle.as_secs()).into(),
                };
                let _ = socket.send(WsMessage::Close(Some(frame))).await;
                return None;
            }
        }
    }
}

async fn ws_session(mut socket: WebSocket, state: AppState, tenant: String, id: String) {
    let idle = state.inner.config.limits.idle_timeout();
    while let Some(msg) = next_frame(&mut socket, idle).await {
        let msg = match msg {
            Ok(m) => m,
            Err(e) => return read_failed(&mut socket, e).await,
        };
        let text = match msg {
            WsMessage::Text(t) => t,
            WsMessage::Close(_) => break,
            _ => continue,
        };
        let req = match WsRequest::parse(text.as_bytes()) {
            Ok(r) => r,
            Err(e) => {
                if send(&mut socket, "error", json!({"message": e.message}), None).await {
                    continue;
                }
                break;
            }
        };
        let request_id = req.request_id.clone();
        if req.kind != "user_message" {
            let m = format!(
                "unknown message type '{}' (expected user_message)",
                req.kind
            );
            if send(
                &mut socket,
                "error",
                json!({ "message": m }),
                request_id.as_ref(),
            )
            .await
            {
                continue;
            }
            break;
        }
        let body = req.body;
        let (mut turn, first) = match start_turn(&state, tenant.clone(), id.clone(), body).await {
            Ok(t) => t,
            Err(e) => {
                let data = json!({"message": e.message, "status": e.status.as_u16()});
                if send(&mut socket, "error", data, request_id.as_ref()).await {
                    continue;
                }
                break;
            }
        };
        let mut pending = Some(first);
        loop {
            let report = match pending.take() {
                Some(r) => r,
                None => tokio::select! {
                    r = turn.rx.recv() => match r { Some(r) => r, None => break },
                    incoming = socket.recv() => match incoming {
                        // A closed socket drops `turn`, which cancels it: the reply is partial.
                        None | Some(Ok(WsMessage::Close(_))) => return,
                        Some(Err(e)) => return read_failed(&mut socket, e).await,
                        Some(Ok(WsMessage::Text(_))) => {
                            let m = json!({"message": "a turn is running; wait for its done or error"});
                            if !send(&mut socket, "error", m, None).await {
                                return;
                            }
                            continue;
                        }
                        Some(Ok(_)) => continue,
                    },
                },
            };
            let last = matches!(report, Report::Finished(_));
            if let Some((name, data)) = turn.frame(report) {
                if !send(&mut socket, name, data, request_id.as_ref()).await {
                    return;
                }
            }
            if last {
                break;
            }
        }
    }
}

/// Sends one frame; false when the socket is gone.
async fn send(socket: &mut WebSocket, kind: &str, data: Value, request_id: Option<&Value>) -> bool {
    let mut frame = match data {
        Value::Object(o) => o,
        other => {
            let mut o = serde_json::Map::new();
            o.insert("data".into(), other);
            o
        }
    };
    frame.insert("type".into(), Value::String(kind.to_string()));
    if let Some(r) = request_id {
        frame.insert("request_id".into(), r.clone());
    }
    socket
        .send(WsMessage::Text(Value::Object(frame).to_string().into()))
        .await
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queued text delta costs its text and a few words, not a `TurnEvent`'s size.
    #[test]
    fn a_queued_text_delta_is_small() {
        assert!(
            std::mem::size_of::<Report>() <= 32,
            "{}",
            std::mem::size_of::<Report>()
        );
    }
}
