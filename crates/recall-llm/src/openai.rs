//! The OpenAI-compatible chat completions adapter (`POST {base}/v1/chat/completions`,
//! `stream: true`): OpenAI, llama.cpp `llama-server`, vLLM, Ollama.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{redact, BackendError, BackendErrorKind};
use crate::event::{BackendEvent, ChatRequest, Usage};
use crate::http::{self, Flow, HttpConfig, SseDecoder, Timeouts};
use crate::render::{kept, require_messages};
use crate::retry::RetryPolicy;
use crate::sse::SseEvent;

impl HttpConfig {
    /// An OpenAI-compatible server's settings: `https://api.openai.com` (a base URL may end in
    /// `/v1` or not: `http://127.0.0.1:8080/v1` for llama-server, `http://localhost:11434` for
    /// Ollama), the key sent as `Authorization: Bearer …` when set and read from
    /// `OPENAI_API_KEY` (local servers often need none), `gpt-4o-mini` when a request names no
    /// model.
    pub fn openai() -> Self {
        HttpConfig {
            base_url: "https://api.openai.com".into(),
            api_key: None,
            model: "gpt-4o-mini".into(),
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            key_env: "OPENAI_API_KEY".into(),
        }
    }
}

/// The OpenAI-compatible chat completions backend.
#[derive(Debug, Clone)]
pub struct OpenAiBackend {
    config: HttpConfig,
    endpoint: http::Endpoint,
}

impl OpenAiBackend {
    /// A backend for `config`; fails on a bad base URL.
    pub fn new(config: HttpConfig) -> Result<Self, BackendError> {
        let endpoint = http::Endpoint::new(&config, chat_path(&config.base_url), map_status)?;
        Ok(OpenAiBackend { config, endpoint })
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    fn headers(&self) -> Result<reqwest::header::HeaderMap, BackendError> {
        http::stream_headers(
            self.config.api_key.as_ref(),
            reqwest::header::AUTHORIZATION.as_str(),
            "Bearer ",
        )
    }
}

/// The path joined to `base_url`: OpenAI's own SDKs read `OPENAI_BASE_URL` with its `/v1`
/// (`http://127.0.0.1:8080/v1`), so a base that already ends in `/v1` does not get another.
pub(crate) fn chat_path(base_url: &str) -> &'static str {
    if base_url.trim_end_matches('/').ends_with("/v1") {
        "/chat/completions"
    } else {
        "/v1/chat/completions"
    }
}

/// The request body sent for `req`: `model`, `messages` (recall-core's `openai` rendering,
/// with the system prompt as the first message), `max_tokens`, `stream: true` and
/// `stream_options: {"include_usage": true}`.
pub fn request_body(req: &ChatRequest, default_model: &str) -> Result<Value, BackendError> {
    require_messages(&req.messages)?;
    let system = req.system_parts();
    let kept = kept(&req.messages);
    let rendered = recall_core::render::render_openai(&recall_core::RenderInput {
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
    body.insert(
        "messages".into(),
        rendered
            .get("messages")
            .cloned()
            .unwrap_or(Value::Array(vec![])),
    );
    if req.max_tokens > 0 {
        body.insert("max_tokens".into(), req.max_tokens.into());
    }
    body.insert("stream".into(), Value::Bool(true));
    let mut opts = Map::new();
    opts.insert("include_usage".into(), Value::Bool(true));
    body.insert("stream_options".into(), Value::Object(opts));
    Ok(Value::Object(body))
}

/// OpenAI's error object (`{"error": {"message", "type", "code"}}`).
#[derive(Debug, Default, Deserialize)]
struct ErrorObject {
    #[serde(default)]
    message: String,
    #[serde(rename = "type", default)]
    error_type: Option<String>,
    #[serde(default)]
    code: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorObject>,
}

fn map_status(status: u16, body: &str, secret: Option<&str>, key_env: &str) -> BackendError {
    let message = match serde_json::from_str::<ErrorBody>(body) {
        Ok(ErrorBody { error: Some(e) }) => e.message,
        _ => body.to_string(),
    };
    let message = redact(&message, secret);
    let kind = match status {
        401 => BackendErrorKind::Auth {
            key_env: key_env.to_string(),
        },
        429 => BackendErrorKind::RateLimited { retry_after: None },
        529 => BackendErrorKind::Overloaded,
        _ => BackendErrorKind::Http {
            status,
            message: if message.is_empty() {
                crate::anthropic::default_reason(status)
            } else {
                message
            },
        },
    };
    BackendError::new(kind)
}

impl http::HttpProvider for OpenAiBackend {
    const NAME: &'static str = "openai";
    const FORMAT: recall_core::Format = recall_core::Format::Openai;
    type Decoder = OpenAiDecoder;

    fn default_model(&self) -> &str {
        &self.config.model
    }

    fn endpoint(&self) -> &http::Endpoint {
        &self.endpoint
    }

    fn headers(&self) -> Result<reqwest::header::HeaderMap, BackendError> {
        OpenAiBackend::headers(self)
    }

    fn body(req: &ChatRequest, default_model: &str) -> Result<Value, BackendError> {
        request_body(req, default_model)
    }

    fn decoder(&self, secret: Option<String>) -> OpenAiDecoder {
        OpenAiDecoder {
            secret,
            ..OpenAiDecoder::default()
        }
    }

    fn models_url(&self) -> Option<reqwest::Url> {
        let path = chat_path(&self.config.base_url).replace("/chat/completions", "/models");
        http::join_url(&self.config.base_url, &path).ok()
    }

    fn served_context(models: &Value, model: &str) -> Option<u64> {
        served_context(models, model)
    }
}

/// The context size of `model` in an OpenAI-compatible model list (`{"data": [{"id", …}]}`):
/// the entry with that id, else the only entry (a local server serves one model whatever it
/// is called). Servers say it in their own field: llama-server `meta.n_ctx` (the size it
/// serves, not `n_ctx_train`), vLLM `max_model_len`, others `context_length` or
/// `context_window`. OpenAI's own list says none.
pub(crate) fn served_context(models: &Value, model: &str) -> Option<u64> {
    let data = models.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    [
        entry.pointer("/meta/n_ctx"),
        entry.get("max_model_len"),
        entry.get("context_length"),
        entry.get("context_window"),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_u64)
    .filter(|n| *n > 0)
}

/// One streamed chunk (`chat.completion.chunk`); every field optional for tolerance.
#[derive(Debug, Default, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Debug, Default, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<ChoiceDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    /// llama.cpp / vLLM reasoning models.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// Some servers (Ollama, OpenRouter) name it `reasoning`.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A tool call being assembled from fragments.
#[derive(Debug, Default)]
struct ToolCall {
    id: String,
    name: String,
    arguments: String,
}

/// SSE → events for chat completions.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    tools: BTreeMap<u64, ToolCall>,
    finish_reason: Option<String>,
    secret: Option<String>,
    /// Bytes held in `tools` (ids, names, arguments and each call's block framing).
    pending: usize,
}

/// What a tool call's block adds to a stored reply besides its id, name and arguments
/// (`{"type":"tool_use","id":"","name":"","input":},`).
const TOOL_BLOCK_FRAMING: usize = 45;

impl OpenAiDecoder {
    fn flush_tools(&mut self, out: &mut Vec<BackendEvent>) {
        self.pending = 0;
        for (index, call) in std::mem::take(&mut self.tools) {
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            out.push(BackendEvent::ToolUse {
                id,
                name: call.name,
                input: crate::anthropic::parse_tool_input(&call.arguments, None),
            });
        }
    }

    fn done(&mut self, out: &mut Vec<BackendEvent>) {
        self.flush_tools(out);
        out.push(BackendEvent::Done {
            stop_reason: self.finish_reason.as_deref().map(map_finish_reason),
        });
    }
}

/// OpenAI finish reasons in the Anthropic vocabulary the events use: `stop` → `end_turn`,
/// `length` → `max_tokens`, `tool_calls`/`function_call` → `tool_use`, `content_filter` →
/// `refusal`; others unchanged.
pub fn map_finish_reason(reason: &str) -> String {
    match reason {
        "stop" => "end_turn",
        "length" => "max_tokens",
        "tool_calls" | "function_call" => "tool_use",
        "content_filter" => "refusal",
        other => other,
    }
    .to_string()
}

impl SseDecoder for OpenAiDecoder {
    fn on_event(
        &mut self,
        ev: SseEvent,
        out: &mut Vec<BackendEvent>,
    ) -> Result<Flow, BackendError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        if data == "[DONE]" {
            self.done(out);
            return Ok(Flow::Finished);
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| BackendError::protocol(format!("a chunk is not valid JSON: {e}")))?;
        if let Some(err) = chunk.error {
            let message = redact(&err.message, self.secret.as_deref());
            let error_type = err
                .error_type
                .or_else(|| {
                    err.code
                        .map(|c| c.to_string().trim_matches('"').to_string())
                })
                .unwrap_or_else(|| "error".into());
            let kind = if error_type.contains("rate_limit") {
                BackendErrorKind::RateLimited { retry_after: None }
            } else if error_type.contains("overloaded") {
                BackendErrorKind::Overloaded
            } else {
                BackendErrorKind::Api {
                    error_type,
                    message,
                }
            };
            return Err(BackendError::new(kind));
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                if let Some(t) = delta.reasoning_content.or(delta.reasoning) {
                    if !t.is_empty() {
                        out.push(BackendEvent::ThinkingDelta(t));
                    }
                }
                if let Some(t) = delta.content {
                    if !t.is_empty() {
                        out.push(BackendEvent::TextDelta(t));
                    }
                }
                for (pos, frag) in delta.tool_calls.into_iter().flatten().enumerate() {
                    let index = frag.index.unwrap_or(pos as u64);
                    if !self.tools.contains_key(&index) {
                        self.pending += TOOL_BLOCK_FRAMING;
                    }
                    let call = self.tools.entry(index).or_default();
                    if let Some(id) = frag.id.filter(|s| !s.is_empty()) {
                        if call.id.is_empty() {
                            self.pending += id.len();
                            call.id = id;
                        }
                    }
                    if let Some(f) = frag.function {
                        if let Some(name) = f.name.filter(|s| !s.is_empty()) {
                            if call.name.is_empty() {
                                self.pending += name.len();
                                call.name = name;
                            }
                        }
                        if let Some(a) = f.arguments {
                            self.pending += a.len();
                            call.arguments.push_str(&a);
                        }
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
                self.flush_tools(out);
            }
        }
        if let Some(u) = chunk.usage {
            out.push(BackendEvent::Usage(Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
                cache_creation_input_tokens: None,
                cache_read_input_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
            }));
        }
        Ok(Flow::Continue)
    }

    fn pending_bytes(&self) -> usize {
        self.pending
    }

    fn on_eof(&mut self, out: &mut Vec<BackendEvent>) {
        if self.finish_reason.is_some() {
            // Some servers end the body without `[DONE]` after the final chunk.
            self.done(out);
        } else {
            out.push(BackendEvent::Error(BackendError::stream(
                "the connection closed before the reply was complete (no finish_reason or [DONE])",
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_core::{Block, Message, Role};
    use serde_json::json;

    #[test]
    fn served_context_reads_each_servers_field() {
        use serde_json::json;
        let llama = json!({"object":"list","data":[{"id":"qwen.gguf","object":"model",
            "meta":{"n_ctx":4096,"n_ctx_train":32768}}]});
        assert_eq!(served_context(&llama, "gpt-4o-mini"), Some(4096));
        let vllm =
            json!({"data":[{"id":"a","max_model_len":8192},{"id":"b","max_model_len":2048}]});
        assert_eq!(served_context(&vllm, "b"), Some(2048));
        assert_eq!(
            served_context(&vllm, "c"),
            None,
            "two models, none of that name"
        );
        let openai = json!({"data":[{"id":"gpt-4o-mini","object":"model","owned_by":"system"}]});
        assert_eq!(served_context(&openai, "gpt-4o-mini"), None);
        assert_eq!(served_context(&json!({"error":"no"}), "x"), None);
        assert_eq!(
            served_context(&json!({"data":[{"id":"x","context_length":0}]}), "x"),
            None
        );
    }

    #[test]
    fn base_url_with_or_without_v1() {
        for base in [
            "http://127.0.0.1:8080",
            "http://127.0.0.1:8080/",
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8080/v1/",
        ] {
            let b = OpenAiBackend::new(HttpConfig {
                base_url: base.into(),
                ..HttpConfig::openai()
            })
            .unwrap();
            assert_eq!(
                b.endpoint.url.as_str(),
                "http://127.0.0.1:8080/v1/chat/completions",
                "{base}"
            );
        }
    }

    #[test]
    fn body_shape() {
        let mut req = ChatRequest::new(vec![
            Message::text(Role::User, "Hi"),
            Message::blocks(
                Role::Assistant,
                vec![Block::ToolUse {
                    id: "c1".into(),
                    name: "f".into(),
                    input: json!({"a": 1}),
                }],
            ),
        ]);
        req.system = Some("sys".into());
        req.model = Some("llama".into());
        let b = request_body(&req, "default").unwrap();
        assert_eq!(
            b,
            json!({
                "model": "llama",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}
                    ]},
                ],
                "max_tokens": 4096,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    fn decode(datas: &[&str]) -> (Vec<BackendEvent>, bool) {
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        for data in datas {
            let ev = SseEvent {
                event: String::new(),
                data: data.to_string(),
            };
            if let Flow::Finished = d.on_event(ev, &mut out).unwrap() {
                return (out, true);
            }
        }
        (out, false)
    }

    #[test]
    fn tool_calls_without_index_use_their_position() {
        let (out, finished) = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}},{"id":"b","function":{"name":"y","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        assert!(finished);
        let names: Vec<_> = out
            .iter()
            .filter_map(|e| match e {
                BackendEvent::ToolUse { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(
            out.last(),
            Some(&BackendEvent::Done {
                stop_reason: Some("tool_use".into())
            })
        );
    }

    #[test]
    fn reasoning_and_null_choices_are_tolerated() {
        let (out, _) = decode(&[
            r#"{"choices":null}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hmm","content":null}}]}"#,
            r#"{"choices":[{"delta":{"content":"ok"}}],"usage":null}"#,
        ]);
        assert_eq!(
            out,
            vec![
                BackendEvent::ThinkingDelta("hmm".into()),
                BackendEvent::TextDelta("ok".into())
            ]
        );
    }

    #[test]
    fn error_chunk_ends_the_stream() {
        let mut d = OpenAiDecoder {
            secret: Some("key-12345678".into()),
            ..Default::default()
        };
        let e = d
            .on_event(
                SseEvent {
                    event: String::new(),
                    data: r#"{"error":{"message":"boom key-12345678","type":"server_error"}}"#
                        .into(),
                },
                &mut Vec::new(),
            )
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "the provider reported an error (server_error): boom [redacted]"
        );
    }

    #[test]
    fn missing_done_after_finish_is_a_completion() {
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        let _ = d.on_event(
            SseEvent {
                event: String::new(),
                data: r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#.into(),
            },
            &mut out,
        );
        let mut end = Vec::new();
        d.on_eof(&mut end);
        assert_eq!(
            end,
            vec![BackendEvent::Done {
                stop_reason: Some("end_turn".into())
            }]
        );
        let mut d = OpenAiDecoder::default();
        let mut end = Vec::new();
        d.on_eof(&mut end);
        assert!(matches!(end.as_slice(), [BackendEvent::Error(_)]));
    }
}
