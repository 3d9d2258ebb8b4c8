//! The one event type every backend streams, the token usage it reports, and the request a
//! backend is given.

use recall_core::Message;

use crate::error::BackendError;

/// Token usage as a backend reports it. Every field is optional because providers report
/// different subsets (OpenAI-compatible servers have no cache-creation count; the Claude Code
/// CLI reports totals only at the end).
///
/// Counts are cumulative for the turn: a later report replaces an earlier one field by field
/// (see [`Usage::merge`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Input tokens after the last cache breakpoint (Anthropic) or all prompt tokens (OpenAI).
    pub input_tokens: Option<u64>,
    /// Output tokens generated so far.
    pub output_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// Takes every field that `newer` has, keeping the current value of the others.
    /// Providers send cumulative counts, so the newest report wins.
    pub fn merge(&mut self, newer: &Usage) {
        if newer.input_tokens.is_some() {
            self.input_tokens = newer.input_tokens;
        }
        if newer.output_tokens.is_some() {
            self.output_tokens = newer.output_tokens;
        }
        if newer.cache_creation_input_tokens.is_some() {
            self.cache_creation_input_tokens = newer.cache_creation_input_tokens;
        }
        if newer.cache_read_input_tokens.is_some() {
            self.cache_read_input_tokens = newer.cache_read_input_tokens;
        }
    }

    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// One event of a streamed reply.
///
/// A stream from [`crate::Backend::stream`] ends with exactly one terminal event,
/// [`BackendEvent::Done`] or [`BackendEvent::Error`], and then ends. Content events arrive in
/// the order of the reply's blocks; [`crate::Assembler`] folds them back into a message.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendEvent {
    /// A piece of reply text.
    TextDelta(String),
    /// A piece of the model's thinking.
    ThinkingDelta(String),
    /// The signature that closes the current thinking block (Anthropic extended thinking; it
    /// must be sent back with the block on later turns). With omitted thinking it is the only
    /// thing that arrives for the block.
    ThinkingSignature(String),
    /// A redacted thinking block (opaque `data`, to be sent back unchanged).
    RedactedThinking(String),
    /// A complete tool call; `input` is the parsed JSON arguments (a JSON string when the
    /// provider sent arguments that are not valid JSON).
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    /// A tool result produced on the backend's side (the Claude Code CLI runs tools itself).
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
    },
    /// Token usage so far (cumulative; merge with [`Usage::merge`]).
    Usage(Usage),
    /// The reply is complete. `stop_reason` uses the Anthropic vocabulary (`end_turn`,
    /// `max_tokens`, `tool_use`, …); OpenAI finish reasons are mapped to it.
    Done { stop_reason: Option<String> },
    /// The reply failed; what arrived before it is a partial reply.
    Error(BackendError),
}

impl BackendEvent {
    /// True for [`BackendEvent::Done`] and [`BackendEvent::Error`].
    pub fn is_terminal(&self) -> bool {
        matches!(self, BackendEvent::Done { .. } | BackendEvent::Error(_))
    }

    /// The bytes of reply content this event adds (text, thinking, a tool call's id, name and
    /// arguments, a tool result): what a reply's size cap counts.
    pub fn content_bytes(&self) -> usize {
        match self {
            BackendEvent::TextDelta(s)
            | BackendEvent::ThinkingDelta(s)
            | BackendEvent::ThinkingSignature(s)
            | BackendEvent::RedactedThinking(s) => s.len(),
            // As stored: the block's JSON, framing included (`{"type":"tool_use","id":…}` and
            // the comma before it), so that many small calls count what they cost.
            BackendEvent::ToolUse { id, name, input } => {
                recall_core::message::Block::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                }
                .to_json()
                .to_string()
                .len()
                    + 1
            }
            BackendEvent::ToolResult {
                tool_use_id,
                content,
                ..
            } => tool_use_id.len() + content.len(),
            BackendEvent::Usage(_) | BackendEvent::Done { .. } | BackendEvent::Error(_) => 0,
        }
    }

    /// True for events that carry reply content (text, thinking, tool calls and results):
    /// once one has been sent, output has started and a failed request must not be retried.
    pub fn is_output(&self) -> bool {
        matches!(
            self,
            BackendEvent::TextDelta(_)
                | BackendEvent::ThinkingDelta(_)
                | BackendEvent::ThinkingSignature(_)
                | BackendEvent::RedactedThinking(_)
                | BackendEvent::ToolUse { .. }
                | BackendEvent::ToolResult { .. }
        )
    }
}

/// The one cap on a reply's size, on every path that reads one (chat turns over HTTP, SSE,
/// WebSocket and the CLI, the gateway, compaction): the bytes of content it has carried so far
/// ([`BackendEvent::content_bytes`]) plus what the backend's decoder holds for content not yet
/// emitted (a tool call's arguments while they stream), against `cap`. Past it, the reply
/// stops there: what fitted is kept as partial, and nothing more is read or passed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyMeter {
    cap: usize,
    size: usize,
}

impl ReplyMeter {
    /// A meter for replies of at most `cap` bytes of content.
    pub fn new(cap: usize) -> ReplyMeter {
        ReplyMeter { cap, size: 0 }
    }

    /// Counts `event`, with `pending` bytes held for content still streaming: the error to
    /// end the reply with when that takes it past the cap (the event is then not counted,
    /// and must not be kept or passed on).
    pub fn admit(&mut self, event: &BackendEvent, pending: usize) -> Result<(), BackendError> {
        let size = self.size.saturating_add(event.content_bytes());
        if size.saturating_add(pending) > self.cap {
            return Err(self.over());
        }
        self.size = size;
        Ok(())
    }

    /// Counts a decoder's new `events` with its `pending` bytes: `None` when all of them fit;
    /// else `events` is cut before the first that does not (all kept when it is the pending
    /// bytes that do not fit), and the error to end the reply with is returned.
    pub fn cut(&mut self, events: &mut Vec<BackendEvent>, pending: usize) -> Option<BackendError> {
        let over = events
            .iter()
            .position(|e| self.admit(e, pending).is_err())
            .or_else(|| self.holds(pending).is_err().then_some(events.len()))?;
        events.truncate(over);
        Some(self.over())
    }

    /// Whether `pending` more bytes still fit (content streaming that is not an event yet).
    pub fn holds(&self, pending: usize) -> Result<(), BackendError> {
        if self.size.saturating_add(pending) > self.cap {
            return Err(self.over());
        }
        Ok(())
    }

    /// The error of a reply past the cap.
    pub fn over(&self) -> BackendError {
        BackendError::protocol(format!(
            "the reply is over max_message_bytes ({} bytes): recall stored it up to there, \
             as partial, and stopped reading it",
            self.cap
        ))
    }

    /// The content bytes counted so far.
    pub fn size(&self) -> usize {
        self.size
    }
}

/// What to send to a backend.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The system prompt. System-role messages in `messages` are appended to it.
    pub system: Option<String>,
    /// The selected history, oldest first, ending with the new user message.
    pub messages: Vec<Message>,
    /// The model; `None` uses the backend's configured default.
    pub model: Option<String>,
    /// The most tokens the reply may have (ignored by the Claude Code CLI, which has no flag
    /// for it).
    pub max_tokens: u32,
    /// The most bytes of content the reply may have ([`ReplyMeter`]): past it, the backend's
    /// stream ends with an error after what fitted. `None`: no cap.
    pub max_reply_bytes: Option<usize>,
}

impl ChatRequest {
    /// Default for [`ChatRequest::max_tokens`].
    pub const DEFAULT_MAX_TOKENS: u32 = 4096;

    /// A request for `messages` with no system prompt, the default model and
    /// [`ChatRequest::DEFAULT_MAX_TOKENS`].
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            system: None,
            messages,
            model: None,
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            max_reply_bytes: None,
        }
    }

    /// The system prompt's parts: `system`, then the text of each system message, blanks
    /// left out.
    pub fn system_parts(&self) -> Vec<String> {
        let mut parts: Vec<String> = self.system.iter().cloned().collect();
        parts.extend(
            self.messages
                .iter()
                .filter(|m| m.role == recall_core::Role::System)
                .map(recall_core::context::system_text),
        );
        parts.retain(|p| !p.trim().is_empty());
        parts
    }
}
