//! Anthropic Messages API streaming wire types (hand-written; only the fields recall reads).
//! Unknown event, block and delta types deserialize to an `Unknown`/`Other` variant and are
//! ignored; unknown fields are ignored everywhere.

use serde::Deserialize;
use serde_json::Value;

use crate::event::Usage;

/// One streamed event (the `data` of an SSE event, or the `event` of a CLI `stream_event`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        #[serde(default)]
        error: ApiError,
    },
    #[serde(other)]
    Unknown,
}

/// `message_start.message`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct MessageStart {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// `content_block_start.content_block`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

/// `content_block_delta.delta`. Variant names are the wire's `type` names.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Delta {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    ThinkingDelta {
        #[serde(default)]
        thinking: String,
    },
    SignatureDelta {
        #[serde(default)]
        signature: String,
    },
    #[serde(other)]
    Other,
}

/// `message_delta.delta`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct MessageDeltaBody {
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// A usage object (every field may be absent or null).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
        }
    }
}

/// The `error` object of an error event or an error response body.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ApiError {
    #[serde(rename = "type", default)]
    pub error_type: String,
    #[serde(default)]
    pub message: String,
}

/// An HTTP error response body: `{"type":"error","error":{…},"request_id":…}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub error: ApiError,
}
