//! The Anthropic Messages API adapter: `POST {base}/v1/messages` with `stream: true`.

mod stream;
mod wire;

pub(crate) use stream::{default_reason, parse_tool_input, MessageStream, Step};
pub(crate) use wire::{StreamEvent, WireUsage};

use serde_json::{Map, Value};

use crate::error::BackendError;
use crate::event::{BackendEvent, ChatRequest};
use crate::http::{self, Flow, HttpConfig, SseDecoder, Timeouts};
use crate::render::{kept, require_messages};
use crate::retry::RetryPolicy;
use crate::sse::SseEvent;

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

impl HttpConfig {
    /// The Anthropic Messages API's settings: `https://api.anthropic.com` (the API root,
    /// without `/v1`), the key sent as `x-api-key` and read from `ANTHROPIC_API_KEY` (local
    /// servers may need none), `claude-sonnet-4-6` when a request names no model.
    pub fn anthropic() -> Self {
        HttpConfig {
            base_url: "https://api.anthropic.com".into(),
            api_key: None,
            model: "claude-sonnet-4-6".into(),
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            key_env: "ANTHROPIC_API_KEY".into(),
        }
    }
}

/// The Anthropic Messages API backend.
#[derive(Debug, Clone)]
pub struct AnthropicBackend {
    config: HttpConfig,
    endpoint: http::Endpoint,
}

impl AnthropicBackend {
    /// A backend for `config`; fails on a bad base URL.
    pub fn new(config: HttpConfig) -> Result<Self, BackendError> {
        let endpoint = http::Endpoint::new(&config, "/v1/messages", map_status)?;
        Ok(AnthropicBackend { config, endpoint })
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    fn headers(&self) -> Result<reqwest::header::HeaderMap, BackendError> {
        let mut h = http::stream_headers(self.config.api_key.as_ref(), "x-api-key", "")?;
        h.insert(
            "anthropic-version",
            reqwest::header::HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(h)
    }
}

/// The request body sent for `req`: `model`, `max_tokens`, `system` (a string, from
/// `req.system` and any system messages), `messages` (recall-core's `anthropic` rendering:
/// thinking kept only in the newest assistant message) and `stream: true`.
pub fn request_body(req: &ChatRequest, default_model: &str) -> Result<Value, BackendError> {
    require_messages(&req.messages)?;
    let system = req.system_parts();
    let kept = kept(&req.messages);
    let rendered = recall_core::render::render_anthropic(&recall_core::RenderInput {
        system_parts: &system,
        kept: &kept,
        current: None,
        escape: false,
        recalled: None,
        summary: None,
    });
    let mut body = Map::new();
    body.insert(
        "model".into(),
        req.model.as_deref().unwrap_or(default_model).into(),
    );
    body.insert("max_tokens".into(), req.max_tokens.into());
    if let Some(s) = rendered.get("system") {
        body.insert("system".into(), s.clone());
    }
    body.insert(
        "messages".into(),
        rendered
            .get("messages")
            .cloned()
            .unwrap_or(Value::Array(vec![])),
    );
    body.insert("stream".into(), Value::Bool(true));
    Ok(Value::Object(body))
}

/// Maps an HTTP error status and body.
fn map_status(status: u16, body: &str, secret: Option<&str>, key_env: &str) -> BackendError {
    let parsed: wire::ErrorBody = serde_json::from_str(body).unwrap_or_else(|_| wire::ErrorBody {
        error: wire::ApiError {
            error_type: String::new(),
            message: body.to_string(),
        },
    });
    stream::api_error(&parsed.error, Some(status), secret, key_env)
}

impl http::HttpProvider for AnthropicBackend {
    const NAME: &'static str = "anthropic";
    const FORMAT: recall_core::Format = recall_core::Format::Anthropic;
    type Decoder = AnthropicDecoder;

    fn default_model(&self) -> &str {
        &self.config.model
    }

    fn endpoint(&self) -> &http::Endpoint {
        &self.endpoint
    }

    fn headers(&self) -> Result<reqwest::header::HeaderMap, BackendError> {
        AnthropicBackend::headers(self)
    }

    fn body(req: &ChatRequest, default_model: &str) -> Result<Value, BackendError> {
        request_body(req, default_model)
    }

    fn decoder(&self, secret: Option<String>) -> AnthropicDecoder {
        AnthropicDecoder {
            stream: MessageStream::new(secret, &self.config.key_env),
        }
    }
}

/// SSE → events for the Messages API.
pub(crate) struct AnthropicDecoder {
    stream: MessageStream,
}

impl AnthropicDecoder {
    /// A decoder with nothing to redact (the gateway's tap: the stream carries no key).
    pub(crate) fn new() -> Self {
        AnthropicDecoder {
            stream: MessageStream::new(None, "ANTHROPIC_API_KEY"),
        }
    }
}

impl SseDecoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        ev: SseEvent,
        out: &mut Vec<BackendEvent>,
    ) -> Result<Flow, BackendError> {
        if ev.data.trim().is_empty() {
            return Ok(Flow::Continue);
        }
        let mut value: Value = serde_json::from_str(&ev.data).map_err(|e| {
            BackendError::protocol(format!("event '{}' is not JSON: {e}", ev.event))
        })?;
        // The `type` in the data is authoritative; fall back to the SSE event name.
        if value.get("type").is_none() && !ev.event.is_empty() {
            if let Value::Object(m) = &mut value {
                m.insert("type".into(), Value::String(ev.event.clone()));
            }
        }
        let parsed: StreamEvent = serde_json::from_value(value)
            .map_err(|e| BackendError::protocol(format!("malformed '{}' event: {e}", ev.event)))?;
        match self.stream.handle(parsed, out) {
            Step::Continue => Ok(Flow::Continue),
            Step::MessageStop => {
                out.push(BackendEvent::Done {
                    stop_reason: self.stream.stop_reason.clone(),
                });
                Ok(Flow::Finished)
            }
            Step::Error(e) => Err(e),
        }
    }

    fn on_eof(&mut self, out: &mut Vec<BackendEvent>) {
        out.push(BackendEvent::Error(BackendError::stream(
            "the connection closed before the message was complete (no message_stop)",
        )));
    }

    fn pending_bytes(&self) -> usize {
        self.stream.pending_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BackendErrorKind;
    use recall_core::{Message, Role};
    use serde_json::json;

    #[test]
    fn body_has_model_system_messages_and_stream() {
        let mut req = ChatRequest::new(vec![
            Message::text(Role::System, "Be brief."),
            Message::text(Role::User, "Hi"),
            Message::text(Role::Assistant, "Hello"),
            Message::text(Role::User, "Bye"),
        ]);
        req.system = Some("You are recall.".into());
        req.max_tokens = 100;
        let b = request_body(&req, "m1").unwrap();
        assert_eq!(
            b,
            json!({
                "model": "m1",
                "max_tokens": 100,
                "system": "You are recall.\nBe brief.",
                "messages": [
                    {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello"},
                    {"role": "user", "content": "Bye"},
                ],
                "stream": true,
            })
        );
        assert_eq!(
            serde_json::to_string(&b).unwrap().find("\"model\""),
            Some(1),
            "model comes first"
        );
    }

    #[test]
    fn empty_request_is_refused() {
        let e = request_body(&ChatRequest::new(vec![]), "m").unwrap_err();
        assert!(e.to_string().contains("no messages"), "{e}");
    }

    #[test]
    fn status_mapping() {
        let e = map_status(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-1234567"}}"#,
            Some("sk-1234567"),
            "ANTHROPIC_API_KEY",
        );
        assert!(matches!(e.kind, BackendErrorKind::Auth { .. }));
        let e = map_status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad sk-1234567"}}"#,
            Some("sk-1234567"),
            "K",
        );
        assert_eq!(
            e.to_string(),
            "HTTP 400 from the provider: invalid_request_error: bad [redacted]"
        );
        let e = map_status(502, "<html>bad gateway</html>", None, "K");
        assert_eq!(
            e.to_string(),
            "HTTP 502 from the provider: <html>bad gateway</html>"
        );
        let e = map_status(529, "", None, "K");
        assert!(matches!(e.kind, BackendErrorKind::Overloaded));
        let e = map_status(503, "", None, "K");
        assert_eq!(
            e.to_string(),
            "HTTP 503 from the provider: Service Unavailable"
        );
    }
}
