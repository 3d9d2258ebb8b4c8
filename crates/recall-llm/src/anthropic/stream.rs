//! The Anthropic streaming state machine, shared by the HTTP adapter and the Claude Code CLI
//! adapter (whose `stream_event` lines carry the same raw events).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::wire::{ApiError, ContentBlock, Delta, StreamEvent};
use crate::error::{redact, BackendError, BackendErrorKind};
use crate::event::{BackendEvent, Usage};

/// A content block that has started and not yet stopped.
#[derive(Debug)]
enum OpenBlock {
    Text,
    Thinking,
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Option<Value>,
    },
    Other,
}

/// What the caller should do after an event.
#[derive(Debug)]
pub(crate) enum Step {
    Continue,
    /// `message_stop`: the API message is complete.
    MessageStop,
    /// An `error` event.
    Error(BackendError),
}

/// Per-message streaming state.
#[derive(Debug, Default)]
pub(crate) struct MessageStream {
    blocks: HashMap<u64, OpenBlock>,
    /// The id from the last `message_start`.
    pub message_id: Option<String>,
    /// The last `stop_reason` from a `message_delta`.
    pub stop_reason: Option<String>,
    /// Tool-use ids already emitted as [`BackendEvent::ToolUse`].
    pub emitted_tools: HashSet<String>,
    secret: Option<String>,
    key_env: String,
    /// Bytes of tool input received for blocks not yet stopped.
    pending: usize,
}

impl MessageStream {
    /// Bytes held for tool calls whose input is still streaming.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.pending
    }

    /// A fresh state; `secret` is redacted from error messages, `key_env` names the key in an
    /// authentication error.
    pub(crate) fn new(secret: Option<String>, key_env: &str) -> Self {
        MessageStream {
            secret,
            key_env: key_env.to_string(),
            ..MessageStream::default()
        }
    }

    /// True when a tool use with `id` was emitted or is being streamed.
    pub(crate) fn knows_tool(&self, id: &str) -> bool {
        self.emitted_tools.contains(id)
            || self
                .blocks
                .values()
                .any(|b| matches!(b, OpenBlock::ToolUse { id: i, .. } if i == id))
    }

    /// Handles one event, pushing the events it produces to `out`.
    pub(crate) fn handle(&mut self, ev: StreamEvent, out: &mut Vec<BackendEvent>) -> Step {
        match ev {
            StreamEvent::MessageStart { message } => {
                self.blocks.clear();
                self.pending = 0;
                self.message_id = message.id;
                if let Some(u) = message.usage {
                    let u = Usage::from(u);
                    if !u.is_empty() {
                        out.push(BackendEvent::Usage(u));
                    }
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let open = match content_block {
                    ContentBlock::Text { text } => {
                        if !text.is_empty() {
                            out.push(BackendEvent::TextDelta(text));
                        }
                        OpenBlock::Text
                    }
                    ContentBlock::Thinking {
                        thinking,
                        signature,
                    } => {
                        if !thinking.is_empty() {
                            out.push(BackendEvent::ThinkingDelta(thinking));
                        }
                        if let Some(s) = signature.filter(|s| !s.is_empty()) {
                            out.push(BackendEvent::ThinkingSignature(s));
                        }
                        OpenBlock::Thinking
                    }
                    ContentBlock::RedactedThinking { data } => {
                        out.push(BackendEvent::RedactedThinking(data));
                        OpenBlock::Other
                    }
                    ContentBlock::ToolUse { id, name, input } => OpenBlock::ToolUse {
                        id,
                        name,
                        json: String::new(),
                        initial: input,
                    },
                    ContentBlock::Other => OpenBlock::Other,
                };
                self.blocks.insert(index, open);
            }
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                Delta::TextDelta { text } => {
                    if !text.is_empty() {
                        out.push(BackendEvent::TextDelta(text));
                    }
                }
                Delta::ThinkingDelta { thinking } => {
                    if !thinking.is_empty() {
                        out.push(BackendEvent::ThinkingDelta(thinking));
                    }
                }
                Delta::SignatureDelta { signature } => {
                    out.push(BackendEvent::ThinkingSignature(signature));
                }
                Delta::InputJsonDelta { partial_json } => {
                    if let Some(OpenBlock::ToolUse { json, .. }) = self.blocks.get_mut(&index) {
                        json.push_str(&partial_json);
                        self.pending += partial_json.len();
                    }
                }
                Delta::Other => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if let Some(OpenBlock::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                }) = self.blocks.remove(&index)
                {
                    self.pending = self.pending.saturating_sub(json.len());
                    let input = parse_tool_input(&json, initial);
                    if self.emitted_tools.insert(id.clone()) {
                        out.push(BackendEvent::ToolUse { id, name, input });
                    }
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(u) = usage {
                    let u = Usage::from(u);
                    if !u.is_empty() {
                        out.push(BackendEvent::Usage(u));
                    }
                }
            }
            StreamEvent::MessageStop => return Step::MessageStop,
            StreamEvent::Ping | StreamEvent::Unknown => {}
            StreamEvent::Error { error } => {
                return Step::Error(api_error(
                    &error,
                    None,
                    self.secret.as_deref(),
                    &self.key_env,
                ))
            }
        }
        Step::Continue
    }
}

/// Parses accumulated `input_json_delta` text. No fragments means the start block's `input`
/// (or `{}`); text that is not JSON is kept as a JSON string rather than lost.
pub(crate) fn parse_tool_input(json: &str, initial: Option<Value>) -> Value {
    if json.trim().is_empty() {
        return initial.unwrap_or_else(|| Value::Object(Default::default()));
    }
    match serde_json::from_str(json) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "tool input is not valid JSON; kept as a string");
            Value::String(json.to_string())
        }
    }
}

/// Maps an Anthropic error object (from an `error` event, `status` `None`, or an HTTP error
/// body) to an error.
pub(crate) fn api_error(
    e: &ApiError,
    status: Option<u16>,
    secret: Option<&str>,
    key_env: &str,
) -> BackendError {
    let message = redact(&e.message, secret);
    let kind = match (e.error_type.as_str(), status) {
        (_, Some(401)) | ("authentication_error", _) => BackendErrorKind::Auth {
            key_env: key_env.to_string(),
        },
        (_, Some(429)) | ("rate_limit_error", _) => {
            BackendErrorKind::RateLimited { retry_after: None }
        }
        (_, Some(529)) | ("overloaded_error", _) => BackendErrorKind::Overloaded,
        (t, Some(status)) => BackendErrorKind::Http {
            status,
            message: match (t.is_empty(), message.is_empty()) {
                (true, true) => default_reason(status),
                (true, false) => message,
                (false, true) => t.to_string(),
                (false, false) => format!("{t}: {message}"),
            },
        },
        (t, None) => BackendErrorKind::Api {
            error_type: if t.is_empty() {
                "error".into()
            } else {
                t.into()
            },
            message,
        },
    };
    BackendError::new(kind)
}

/// The standard reason phrase of a status, for bodies that say nothing.
pub(crate) fn default_reason(status: u16) -> String {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("error")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> (Vec<BackendEvent>, Vec<String>) {
        let mut s = MessageStream::new(None, "ANTHROPIC_API_KEY");
        let mut out = Vec::new();
        let mut steps = Vec::new();
        for e in events {
            let ev: StreamEvent = serde_json::from_str(e).unwrap();
            steps.push(format!("{:?}", s.handle(ev, &mut out)));
        }
        (out, steps)
    }

    #[test]
    fn fragmented_tool_input_is_parsed_at_stop() {
        let (out, _) = run(&[
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"Paris\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
        ]);
        assert_eq!(
            out,
            vec![BackendEvent::ToolUse {
                id: "toolu_1".into(),
                name: "get_weather".into(),
                input: serde_json::json!({"location": "Paris"})
            }]
        );
    }

    #[test]
    fn unknown_events_and_deltas_are_ignored() {
        let (out, steps) = run(&[
            r#"{"type":"brand_new_event","x":1}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"mystery"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert!(out.is_empty());
        assert_eq!(steps.last().map(String::as_str), Some("MessageStop"));
    }

    #[test]
    fn error_event_maps_types() {
        let (_, steps) = run(&[
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ]);
        assert!(steps[0].contains("Overloaded"), "{steps:?}");
    }

    #[test]
    fn bad_tool_json_is_kept_as_string() {
        assert_eq!(
            parse_tool_input("{oops", None),
            Value::String("{oops".into())
        );
        assert_eq!(parse_tool_input("", None), serde_json::json!({}));
    }
}
