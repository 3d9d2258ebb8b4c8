//! Folding a stream of events back into one assistant message, complete or partial.
//!
//! ```
//! use recall_llm::{Assembler, BackendEvent, ReplyStatus};
//! let mut a = Assembler::new();
//! a.push(&BackendEvent::TextDelta("Hel".into()));
//! a.push(&BackendEvent::TextDelta("lo".into()));
//! a.push(&BackendEvent::Done { stop_reason: Some("end_turn".into()) });
//! let reply = a.finish();
//! assert_eq!(reply.text(), "Hello");
//! assert_eq!(reply.status, ReplyStatus::Complete);
//! ```

use futures::StreamExt;
use recall_core::message::ToolResultContent;
use recall_core::{Block, Content, Message, Role};

use crate::backend::EventStream;
use crate::error::BackendError;
use crate::event::{BackendEvent, Usage};

/// Whether a reply arrived whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplyStatus {
    /// The backend finished the reply ([`BackendEvent::Done`] and no error).
    Complete,
    /// The stream failed or ended early; the message holds what arrived.
    Partial,
}

/// An assembled reply.
#[derive(Debug, Clone, PartialEq)]
pub struct AssembledReply {
    /// The assistant message. A reply that is a single text block has string content;
    /// anything else (thinking, tool calls, several blocks, nothing) has block content.
    pub message: Message,
    /// The last reported usage, merged field by field.
    pub usage: Usage,
    /// The stop reason of [`BackendEvent::Done`].
    pub stop_reason: Option<String>,
    /// Complete or partial.
    pub status: ReplyStatus,
    /// The error that ended a partial reply (`None` for a complete one, and for a stream that
    /// ended without a terminal event).
    pub error: Option<BackendError>,
    /// `tool_result` blocks the backend produced itself (Claude Code CLI tools), in order.
    /// They belong to a user message after [`AssembledReply::message`].
    pub tool_results: Vec<Block>,
}

impl AssembledReply {
    /// The reply's text blocks, concatenated.
    pub fn text(&self) -> String {
        match &self.message.content {
            Content::Text(s) => s.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }

    /// True when the reply completed.
    pub fn is_complete(&self) -> bool {
        self.status == ReplyStatus::Complete
    }

    /// True when the message has any content at all.
    pub fn has_content(&self) -> bool {
        match &self.message.content {
            Content::Text(s) => !s.is_empty(),
            Content::Blocks(b) => !b.is_empty(),
        }
    }
}

/// Folds [`BackendEvent`]s into an [`AssembledReply`]. Events after the first terminal event
/// are ignored.
#[derive(Debug, Default)]
pub struct Assembler {
    blocks: Vec<Block>,
    usage: Usage,
    stop_reason: Option<String>,
    done: bool,
    error: Option<BackendError>,
    tool_results: Vec<Block>,
}

impl Assembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once a terminal event has been pushed.
    pub fn is_finished(&self) -> bool {
        self.done || self.error.is_some()
    }

    /// Adds one event.
    pub fn push(&mut self, event: &BackendEvent) {
        if self.is_finished() {
            return;
        }
        match event {
            BackendEvent::TextDelta(t) => {
                if t.is_empty() {
                    return;
                }
                match self.blocks.last_mut() {
                    Some(Block::Text { text }) => text.push_str(t),
                    _ => self.blocks.push(Block::Text { text: t.clone() }),
                }
            }
            BackendEvent::ThinkingDelta(t) => match self.blocks.last_mut() {
                Some(Block::Thinking {
                    thinking,
                    signature: None,
                }) => thinking.push_str(t),
                _ => self.blocks.push(Block::Thinking {
                    thinking: t.clone(),
                    signature: None,
                }),
            },
            BackendEvent::ThinkingSignature(s) => match self.blocks.last_mut() {
                Some(Block::Thinking {
                    signature: sig @ None,
                    ..
                }) => *sig = Some(s.clone()),
                _ => self.blocks.push(Block::Thinking {
                    thinking: String::new(),
                    signature: Some(s.clone()),
                }),
            },
            BackendEvent::RedactedThinking(data) => {
                self.blocks
                    .push(Block::RedactedThinking { data: data.clone() });
            }
            BackendEvent::ToolUse { id, name, input } => self.blocks.push(Block::ToolUse {
                id: id.clone(),
                name: name.clone(),
                input: input.clone(),
            }),
            BackendEvent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => self.tool_results.push(Block::ToolResult {
                tool_use_id: tool_use_id.clone(),
                content: ToolResultContent::Text(content.clone()),
                is_error: is_error.then_some(true),
            }),
            BackendEvent::Usage(u) => self.usage.merge(u),
            BackendEvent::Done { stop_reason } => {
                self.done = true;
                if stop_reason.is_some() {
                    self.stop_reason = stop_reason.clone();
                }
            }
            BackendEvent::Error(e) => self.error = Some(e.clone()),
        }
    }

    /// True once any content (text, thinking, a tool call or a tool result) has arrived.
    pub fn has_content(&self) -> bool {
        !self.blocks.is_empty() || !self.tool_results.is_empty()
    }

    /// The assistant message so far, without consuming the assembler (to save a partial reply
    /// while the stream goes on).
    pub fn message(&self) -> Message {
        message_of(self.blocks.clone())
    }

    /// The usage reported so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The reply so far.
    pub fn finish(self) -> AssembledReply {
        let status = if self.done && self.error.is_none() {
            ReplyStatus::Complete
        } else {
            ReplyStatus::Partial
        };
        let message = message_of(self.blocks);
        AssembledReply {
            message,
            usage: self.usage,
            stop_reason: self.stop_reason,
            status,
            error: self.error,
            tool_results: self.tool_results,
        }
    }
}

/// A single text block is string content; anything else is block content.
fn message_of(blocks: Vec<Block>) -> Message {
    match blocks.as_slice() {
        [Block::Text { text }] => Message::text(Role::Assistant, text.clone()),
        _ => Message::blocks(Role::Assistant, blocks),
    }
}

/// Reads `stream` to its end and assembles the reply.
pub async fn collect(mut stream: EventStream) -> AssembledReply {
    let mut a = Assembler::new();
    while let Some(ev) = stream.next().await {
        a.push(&ev);
    }
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BackendErrorKind;
    use serde_json::json;

    #[test]
    fn blocks_in_order_with_signature() {
        let mut a = Assembler::new();
        for ev in [
            BackendEvent::ThinkingDelta("let me ".into()),
            BackendEvent::ThinkingDelta("think".into()),
            BackendEvent::ThinkingSignature("sig".into()),
            BackendEvent::TextDelta("Hi".into()),
            BackendEvent::ToolUse {
                id: "t1".into(),
                name: "f".into(),
                input: json!({"a": 1}),
            },
            BackendEvent::TextDelta("after".into()),
            BackendEvent::Usage(Usage {
                input_tokens: Some(5),
                output_tokens: Some(1),
                ..Usage::default()
            }),
            BackendEvent::Usage(Usage {
                output_tokens: Some(9),
                ..Usage::default()
            }),
            BackendEvent::Done {
                stop_reason: Some("tool_use".into()),
            },
            BackendEvent::TextDelta("ignored".into()),
        ] {
            a.push(&ev);
        }
        let r = a.finish();
        assert_eq!(r.status, ReplyStatus::Complete);
        assert_eq!(r.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(r.usage.input_tokens, Some(5));
        assert_eq!(r.usage.output_tokens, Some(9));
        assert_eq!(
            r.message.to_json(),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "let me think", "signature": "sig"},
                {"type": "text", "text": "Hi"},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
                {"type": "text", "text": "after"},
            ]})
        );
        assert_eq!(r.text(), "Hiafter");
    }

    #[test]
    fn error_makes_a_partial_reply_with_what_arrived() {
        let mut a = Assembler::new();
        a.push(&BackendEvent::TextDelta("part".into()));
        a.push(&BackendEvent::Error(
            BackendError::stream("reset").with_output_started(true),
        ));
        let r = a.finish();
        assert_eq!(r.status, ReplyStatus::Partial);
        assert_eq!(r.message, Message::text(Role::Assistant, "part"));
        assert!(matches!(
            r.error.map(|e| e.kind),
            Some(BackendErrorKind::Stream { .. })
        ));
    }

    #[test]
    fn no_terminal_event_is_partial() {
        let r = Assembler::new().finish();
        assert_eq!(r.status, ReplyStatus::Partial);
        assert!(!r.has_content());
    }
}
