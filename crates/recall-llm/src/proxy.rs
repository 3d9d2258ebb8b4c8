//! Forwarding a request body to a provider unchanged, for recall's gateway (issue 17): the
//! response comes back as the provider sent it (status, the headers a client reads, the body
//! bytes as they arrive), and [`ReplyTap`] reads the same bytes into [`BackendEvent`]s so
//! the reply can be stored while the client receives it untouched.
//!
//! Unlike the [`Backend`](crate::Backend) adapters, nothing is retried here: a 429 or a 5xx
//! goes back to the client, whose SDK retries as it always does.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use recall_core::gateway::Provider;
pub use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};

use crate::anthropic::{AnthropicDecoder, ANTHROPIC_VERSION};
use crate::error::{redact, BackendError, BackendErrorKind};
use crate::event::BackendEvent;
use crate::http::{self, Flow, HttpConfig, SseDecoder, Timeouts};
use crate::openai::{chat_path, OpenAiDecoder};
use crate::sse::{SseEvent, SseParser};

/// The most bytes of a provider's error answer read ([`Upstream::error_body`]).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// A provider the gateway forwards to: its URL, key and time limits.
#[derive(Debug, Clone)]
pub struct Upstream {
    provider: Provider,
    client: reqwest::Client,
    url: reqwest::Url,
    api_key: Option<crate::ApiKey>,
    timeouts: Timeouts,
}

/// The request headers an Anthropic SDK sends that the provider must see as well. Everything
/// else (the client's key above all: it is recall's key) stays at recall, and an OpenAI
/// upstream gets none of them (another provider's headers are not its business).
const FORWARDED_ANTHROPIC_HEADERS: [&str; 2] = ["anthropic-version", "anthropic-beta"];

/// Whether a provider's response header goes back to the client: the content type, the
/// provider's request id, `retry-after` and the rate-limit headers SDKs read.
fn forwarded_response_header(name: &str) -> bool {
    matches!(name, "content-type" | "retry-after" | "request-id")
        || name.starts_with("anthropic-ratelimit-")
        || name.starts_with("x-ratelimit-")
        || name.starts_with("openai-")
        || name.starts_with("retry-after-")
}

/// The response headers passed back to the client ([`forwarded_response_header`]), each
/// value with every credential masked as error messages are (a provider or a proxy before it
/// may echo the operator's key in a request id or a rate-limit header); a value that is not
/// text is dropped, as it cannot be checked.
fn forwarded_headers(headers: &HeaderMap, secret: Option<&str>) -> Vec<(HeaderName, HeaderValue)> {
    headers
        .iter()
        .filter(|(n, _)| forwarded_response_header(n.as_str()))
        .filter_map(|(n, v)| {
            let text = v.to_str().ok()?;
            let masked = redact(text, secret);
            if masked == text {
                Some((n.clone(), v.clone()))
            } else {
                HeaderValue::from_str(&masked).ok().map(|m| (n.clone(), m))
            }
        })
        .collect()
}

/// The provider's answer: its status, the headers a client reads, and the body as it
/// arrives.
pub struct UpstreamResponse {
    pub status: u16,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body's chunks; an `Err` ends it (a dropped connection, a silence longer than the
    /// idle limit).
    pub body: BoxStream<'static, Result<Bytes, BackendError>>,
}

impl std::fmt::Debug for UpstreamResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// The upstream of `provider` at `config`'s base URL (Anthropic: the API root, requests
    /// go to `/v1/messages`; OpenAI-compatible: with or without `/v1`, requests go to
    /// `…/chat/completions`), sending `config`'s key.
    pub fn new(provider: Provider, config: &HttpConfig) -> Result<Upstream, BackendError> {
        let path = match provider {
            Provider::Anthropic => "/v1/messages",
            Provider::OpenAi => chat_path(&config.base_url),
        };
        Ok(Upstream {
            provider,
            client: http::client(&config.timeouts)?,
            url: http::join_url(&config.base_url, path)?,
            api_key: config.api_key.clone(),
            timeouts: config.timeouts,
        })
    }

    /// Which API this upstream speaks.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Posts `body` (JSON) with the provider's key and the `client_headers` it must see
    /// (`anthropic-version`, `anthropic-beta`), and returns once the response head arrives.
    /// `Err` only when no response came (connection refused, a timeout): a provider's error
    /// status is an `Ok` carrying it.
    pub async fn send(
        &self,
        body: Vec<u8>,
        client_headers: &HeaderMap,
        stream: bool,
    ) -> Result<UpstreamResponse, BackendError> {
        let headers = self.headers(client_headers, stream)?;
        let secret = self.api_key.as_ref().map(|k| k.expose().to_string());
        let send = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .body(body)
            .send();
        let resp = tokio::time::timeout(self.timeouts.idle, send)
            .await
            .map_err(|_| {
                BackendError::new(BackendErrorKind::Timeout {
                    after: self.timeouts.idle,
                })
            })?
            .map_err(|e| http::transport_error(&e, secret.as_deref(), false))?;
        let status = resp.status().as_u16();
        let headers = forwarded_headers(resp.headers(), secret.as_deref());
        let idle = self.timeouts.idle;
        let body = futures::stream::unfold(
            (resp.bytes_stream(), secret),
            move |(mut s, secret)| async move {
                let next = match tokio::time::timeout(idle, s.next()).await {
                    Err(_) => Some(Err(BackendError::new(BackendErrorKind::Timeout {
                        after: idle,
                    }))),
                    Ok(None) => None,
                    Ok(Some(Ok(b))) => Some(Ok(b)),
                    Ok(Some(Err(e))) => {
                        let mut err = http::transport_error(&e, secret.as_deref(), true);
                        if let BackendErrorKind::Connect { message } = err.kind {
                            err.kind = BackendErrorKind::Stream { message };
                        }
                        Some(Err(err))
                    }
                };
                next.map(|item| (item, (s, secret)))
            },
        );
        Ok(UpstreamResponse {
            status,
            headers,
            body: body.boxed(),
        })
    }

    /// A provider's error answer, rewritten for the client: the provider's error type (and
    /// OpenAI's `param` and `code`) kept, its message passed through [`redact`] (this
    /// upstream's key and anything else that looks like a credential masked, a few hundred
    /// characters at most), in the provider's JSON shape. A body that is not the provider's
    /// error JSON becomes one, typed by `status`. The bytes read are at most
    /// [`MAX_ERROR_BODY_BYTES`].
    pub fn error_body(&self, status: u16, body: &[u8]) -> Vec<u8> {
        let secret = self.api_key.as_ref().map(|k| k.expose().to_string());
        let mask = |s: &str| redact(s, secret.as_deref());
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let error = parsed.as_ref().and_then(|v| v.get("error"));
        let text = |key: &str| error.and_then(|e| e.get(key)).and_then(Value::as_str);
        let message = match text("message") {
            Some(m) => mask(m),
            None => {
                let raw = String::from_utf8_lossy(&body[..body.len().min(MAX_ERROR_BODY_BYTES)]);
                let m = mask(&raw);
                if m.is_empty() {
                    format!("the provider answered {status}")
                } else {
                    m
                }
            }
        };
        // A type or code is a short identifier that holds no credential (`sk_live_…` is one
        // by its characters); anything else is not passed on.
        let ident = |key: &str| {
            text(key)
                .filter(|t| {
                    t.len() <= 64
                        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && mask(t) == *t
                })
                .map(str::to_string)
        };
        let out = match self.provider {
            Provider::Anthropic => {
                let kind = ident("type").unwrap_or_else(|| {
                    match status {
                        400 | 409 | 413 | 415 | 422 => "invalid_request_error",
                        401 => "authentication_error",
                        403 => "permission_error",
                        404 => "not_found_error",
                        429 => "rate_limit_error",
                        529 => "overloaded_error",
                        _ => "api_error",
                    }
                    .to_string()
                });
                json!({"type": "error", "error": {"type": kind, "message": message}})
            }
            Provider::OpenAi => {
                let kind = ident("type").unwrap_or_else(|| {
                    match status {
                        401 => "authentication_error",
                        404 => "not_found_error",
                        429 => "rate_limit_exceeded",
                        s if s >= 500 => "server_error",
                        _ => "invalid_request_error",
                    }
                    .to_string()
                });
                let param = text("param").map(mask);
                json!({"error": {"message": message, "type": kind, "param": param, "code": ident("code")}})
            }
        };
        serde_json::to_vec(&out).unwrap_or_default()
    }

    /// An error event in the provider's stream format, ending a streamed reply recall cut
    /// short (the SDKs raise it as an API error with `message`): Anthropic's `event: error`,
    /// OpenAI's `data: {"error": …}`.
    pub fn stream_error(&self, message: &str) -> Vec<u8> {
        match self.provider {
            Provider::Anthropic => format!(
                "event: error\ndata: {}\n\n",
                json!({"type": "error", "error": {"type": "api_error", "message": message}})
            ),
            Provider::OpenAi => format!(
                "data: {}\n\n",
                json!({"error": {"message": message, "type": "server_error", "param": null,
                    "code": "reply_too_large"}})
            ),
        }
        .into_bytes()
    }

    fn headers(&self, client: &HeaderMap, stream: bool) -> Result<HeaderMap, BackendError> {
        let (name, prefix) = match self.provider {
            Provider::Anthropic => ("x-api-key", ""),
            Provider::OpenAi => ("authorization", "Bearer "),
        };
        let mut h = http::stream_headers(self.api_key.as_ref(), name, prefix)?;
        if !stream {
            h.insert(
                reqwest::header::ACCEPT,
                HeaderValue::from_static("application/json"),
            );
        }
        if self.provider == Provider::Anthropic {
            h.insert(
                "anthropic-version",
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
            for name in FORWARDED_ANTHROPIC_HEADERS {
                if let Some(v) = client.get(name) {
                    h.insert(name, v.clone());
                }
            }
        }
        Ok(h)
    }
}

/// Reads a provider's reply, streamed (SSE bytes, chunk by chunk) or whole (a JSON body),
/// into [`BackendEvent`]s, ending with one terminal event; an [`Assembler`](crate::Assembler)
/// folds them into the message to store.
///
/// ```
/// use recall_core::gateway::Provider;
/// use recall_llm::{proxy::ReplyTap, Assembler};
/// let mut tap = ReplyTap::new(Provider::OpenAi);
/// let mut a = Assembler::new();
/// for ev in tap.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n") {
///     a.push(&ev);
/// }
/// assert_eq!(a.finish().text(), "Hi");
/// ```
pub struct ReplyTap {
    parser: SseParser,
    decoder: Box<dyn SseDecoder>,
    finished: bool,
}

impl std::fmt::Debug for ReplyTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyTap")
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl ReplyTap {
    /// A tap for `provider`'s event stream.
    pub fn new(provider: Provider) -> ReplyTap {
        let decoder: Box<dyn SseDecoder> = match provider {
            Provider::Anthropic => Box::new(AnthropicDecoder::new()),
            Provider::OpenAi => Box::<OpenAiDecoder>::default(),
        };
        ReplyTap {
            parser: SseParser::default(),
            decoder,
            finished: false,
        }
    }

    /// Bytes the decoder holds for content not emitted yet (tool calls' arguments while they
    /// stream), which the reply's cap counts ([`crate::ReplyMeter`]).
    pub fn pending_bytes(&self) -> usize {
        self.decoder.pending_bytes()
    }

    /// True once a terminal event was returned.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The events the bytes complete (none after the terminal one).
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        match self.parser.feed(chunk) {
            Ok(events) => {
                for ev in events {
                    self.event(ev, &mut out);
                    if self.finished {
                        break;
                    }
                }
            }
            Err(msg) => self.fail(BackendError::protocol(msg), &mut out),
        }
        out
    }

    /// The body ended: the last events (an error when the reply was not complete).
    pub fn finish(&mut self) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        if !self.finished {
            self.decoder.on_eof(&mut out);
            self.finished = true;
        }
        out
    }

    /// The stream stopped for `error` (the client or the provider went away).
    pub fn fail_with(&mut self, error: BackendError) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        if !self.finished {
            self.fail(error, &mut out);
        }
        out
    }

    fn event(&mut self, ev: SseEvent, out: &mut Vec<BackendEvent>) {
        match self.decoder.on_event(ev, out) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Finished) => self.finished = true,
            Err(e) => self.fail(e, out),
        }
    }

    fn fail(&mut self, e: BackendError, out: &mut Vec<BackendEvent>) {
        out.push(BackendEvent::Error(e));
        self.finished = true;
    }

    /// The events of a whole (non-streamed) JSON reply: the provider's response read as the
    /// stream of the same reply would be, so both paths store the same message.
    pub fn whole(provider: Provider, body: &[u8]) -> Vec<BackendEvent> {
        let mut tap = ReplyTap::new(provider);
        let value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return tap.fail_with(BackendError::protocol(format!(
                    "the provider's reply is not JSON: {e}"
                )))
            }
        };
        let events = match provider {
            Provider::Anthropic => anthropic_events(&value),
            Provider::OpenAi => openai_events(&value),
        };
        let mut out = Vec::new();
        for data in events {
            if tap.finished {
                break;
            }
            tap.event(
                SseEvent {
                    event: String::new(),
                    data: match data {
                        Value::String(s) => s,
                        other => other.to_string(),
                    },
                },
                &mut out,
            );
        }
        out.extend(tap.finish());
        out
    }
}

/// An Anthropic message as the stream would have carried it.
fn anthropic_events(m: &Value) -> Vec<Value> {
    let mut out = vec![json!({"type": "message_start", "message": {
        "id": m.get("id"), "usage": m.get("usage"),
    }})];
    for (i, block) in m
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        out.push(json!({"type": "content_block_start", "index": i, "content_block": block}));
        out.push(json!({"type": "content_block_stop", "index": i}));
    }
    out.push(json!({"type": "message_delta",
        "delta": {"stop_reason": m.get("stop_reason")}, "usage": m.get("usage")}));
    out.push(json!({"type": "message_stop"}));
    out
}

/// An OpenAI chat completion as one chunk of its stream, then `[DONE]`.
fn openai_events(c: &Value) -> Vec<Value> {
    let choice = c.get("choices").and_then(|c| c.get(0));
    let message = choice.and_then(|c| c.get("message"));
    let field = |k: &str| message.and_then(|m| m.get(k)).cloned();
    let calls: Vec<Value> = field("tool_calls")
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, mut call)| {
            if let Value::Object(o) = &mut call {
                o.insert("index".into(), i.into());
            }
            call
        })
        .collect();
    let delta = json!({
        "content": field("content"),
        "reasoning_content": field("reasoning_content"),
        "tool_calls": calls,
    });
    vec![
        json!({"choices": [{"delta": delta,
            "finish_reason": choice.and_then(|c| c.get("finish_reason"))}],
            "usage": c.get("usage")}),
        Value::String("[DONE]".into()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Assembler;
    use std::collections::HashMap;

    fn assemble(events: Vec<BackendEvent>) -> crate::AssembledReply {
        let mut a = Assembler::new();
        for ev in &events {
            a.push(ev);
        }
        a.finish()
    }

    #[test]
    fn anthropic_headers_reach_only_an_anthropic_upstream() {
        let mut client = HeaderMap::new();
        client.insert("anthropic-beta", HeaderValue::from_static("prompt-caching"));
        client.insert(
            "x-api-key",
            HeaderValue::from_static("the-client's-recall-key"),
        );
        let config = |base: &str, c: HttpConfig| HttpConfig {
            base_url: base.into(),
            ..c
        };
        let anthropic = Upstream::new(
            Provider::Anthropic,
            &config("http://127.0.0.1:9", HttpConfig::anthropic()).with_key("sk-operator-key"),
        )
        .unwrap();
        let h = anthropic.headers(&client, true).unwrap();
        assert_eq!(h.get("anthropic-beta").unwrap(), "prompt-caching");
        assert_eq!(h.get("x-api-key").unwrap(), "sk-operator-key");
        let openai = Upstream::new(
            Provider::OpenAi,
            &config("http://127.0.0.1:9/v1", HttpConfig::openai()),
        )
        .unwrap();
        let h = openai.headers(&client, true).unwrap();
        for name in ["anthropic-beta", "anthropic-version", "x-api-key"] {
            assert!(
                h.get(name).is_none(),
                "{name} sent to an OpenAI upstream: {h:?}"
            );
        }
    }

    #[test]
    fn error_answers_keep_their_type_and_lose_every_key() {
        let anthropic = Upstream::new(
            Provider::Anthropic,
            &HttpConfig {
                base_url: "http://127.0.0.1:9".into(),
                ..HttpConfig::anthropic()
            }
            .with_key("sk-operator-0123456789"),
        )
        .unwrap();
        let body = br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-operator-0123456789 (also sk-ant-other-999999999)"}}"#;
        let out: Value = serde_json::from_slice(&anthropic.error_body(401, body)).unwrap();
        assert_eq!(
            out,
            json!({"type": "error", "error": {"type": "authentication_error",
                "message": "invalid x-api-key [redacted] (also [redacted])"}})
        );
        // Not the provider's JSON: typed by the status, the text masked.
        let out: Value = serde_json::from_slice(
            &anthropic.error_body(502, b"<html>bad gateway Bearer abcdefgh123</html>"),
        )
        .unwrap();
        assert_eq!(out["error"]["type"], "api_error");
        assert_eq!(
            out["error"]["message"],
            "<html>bad gateway Bearer [redacted]</html>"
        );

        let openai = Upstream::new(
            Provider::OpenAi,
            &HttpConfig {
                base_url: "http://127.0.0.1:9/v1".into(),
                ..HttpConfig::openai()
            }
            .with_key("sk-proj-operator-0123456789"),
        )
        .unwrap();
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-proj-operator-0123456789.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        let out: Value = serde_json::from_slice(&openai.error_body(401, body)).unwrap();
        assert_eq!(
            out,
            json!({"error": {"message": "Incorrect API key provided: [redacted].",
                "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
        );
        let out: Value = serde_json::from_slice(&openai.error_body(503, b"")).unwrap();
        assert_eq!(out["error"]["type"], "server_error");
        assert_eq!(out["error"]["message"], "the provider answered 503");
        // Issue 49: the key, or anything shaped like one, in `code` (an identifier by its
        // characters) is not passed on.
        for code in ["sk_proj_operator_0123456789", "sk_live_abcdefghijklmnop"] {
            let body = format!(
                r#"{{"error":{{"message":"no","type":"invalid_request_error","param":null,"code":"{code}"}}}}"#
            );
            let keyed = Upstream::new(
                Provider::OpenAi,
                &HttpConfig {
                    base_url: "http://127.0.0.1:9/v1".into(),
                    ..HttpConfig::openai()
                }
                .with_key("sk_proj_operator_0123456789"),
            )
            .unwrap();
            let out: Value =
                serde_json::from_slice(&keyed.error_body(401, body.as_bytes())).unwrap();
            assert_eq!(out["error"]["code"], Value::Null, "{out}");
            assert!(!out.to_string().contains(code), "{out}");
        }
    }

    #[test]
    fn passed_through_headers_lose_every_key() {
        let key = "sk-proj-operator-0123456789";
        let mut h = HeaderMap::new();
        h.insert("request-id", HeaderValue::from_static("req_123"));
        h.insert(
            "openai-organization",
            HeaderValue::from_str(&format!("org for {key}")).unwrap(),
        );
        h.insert(
            "x-ratelimit-remaining-requests",
            HeaderValue::from_static("sk-ant-other-999999999"),
        );
        h.insert("retry-after", HeaderValue::from_static("3"));
        h.insert(
            "openai-processing-ms",
            HeaderValue::from_bytes(b"\xff\xfe").unwrap(),
        );
        h.insert("set-cookie", HeaderValue::from_static("session=abc"));
        let out: HashMap<String, String> = forwarded_headers(&h, Some(key))
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        assert_eq!(out["request-id"], "req_123");
        assert_eq!(out["retry-after"], "3");
        assert_eq!(out["openai-organization"], "org for [redacted]");
        assert_eq!(out["x-ratelimit-remaining-requests"], "[redacted]");
        assert!(
            !out.contains_key("openai-processing-ms"),
            "not text: dropped"
        );
        assert!(!out.contains_key("set-cookie"), "not a forwarded header");
    }

    #[test]
    fn an_anthropic_stream_split_anywhere_gives_the_same_reply() {
        let sse = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":3}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Héllo\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        )
        .as_bytes();
        for cut in 0..sse.len() {
            let mut tap = ReplyTap::new(Provider::Anthropic);
            let mut events = tap.feed(&sse[..cut]);
            events.extend(tap.feed(&sse[cut..]));
            events.extend(tap.finish());
            let reply = assemble(events);
            assert_eq!(reply.text(), "Héllo");
            assert!(reply.is_complete());
            assert_eq!(reply.usage.cache_read_input_tokens, Some(3));
            assert_eq!(reply.usage.output_tokens, Some(2));
        }
    }

    #[test]
    fn a_cut_stream_is_partial() {
        let mut tap = ReplyTap::new(Provider::Anthropic);
        let mut events = tap.feed(b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"Hal\"}}\n\n");
        events.extend(tap.finish());
        let reply = assemble(events);
        assert_eq!(reply.text(), "Hal");
        assert!(!reply.is_complete());
    }

    #[test]
    fn whole_replies_read_like_their_streams() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","content":[
            {"type":"text","text":"Let me look."},
            {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}],
            "stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":4}}"#;
        let reply = assemble(ReplyTap::whole(Provider::Anthropic, body));
        assert!(reply.is_complete());
        assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(reply.usage.input_tokens, Some(10));
        let json = recall_core::message::content_json(&reply.message.content);
        assert_eq!(
            json,
            json!([{"type":"text","text":"Let me look."},
                   {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}])
        );

        let body = br#"{"id":"c","object":"chat.completion","choices":[{"index":0,
            "message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1",
            "type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
            "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#;
        let reply = assemble(ReplyTap::whole(Provider::OpenAi, body));
        assert!(reply.is_complete());
        assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(reply.usage.input_tokens, Some(7));
        let json = recall_core::message::content_json(&reply.message.content);
        assert_eq!(
            json,
            json!([{"type":"tool_use","id":"call_1","name":"f","input":{"a":1}}])
        );

        let reply = assemble(ReplyTap::whole(Provider::OpenAi, b"<html>"));
        assert!(!reply.is_complete());
    }
}
