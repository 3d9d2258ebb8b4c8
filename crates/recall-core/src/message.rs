//! The message model: one normalised, Anthropic-shaped representation of every message,
//! whatever shape it arrived in (docs/FORMATS.md §1).
//!
//! ```
//! use recall_core::message::{Message, Role};
//! let m = Message::text(Role::User, "Hello");
//! assert_eq!(m.to_json().to_string(), r#"{"role":"user","content":"Hello"}"#);
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

/// Who said a message. OpenAI's `developer` becomes [`Role::System`]; a run of OpenAI `tool`
/// messages becomes one [`Role::User`] message of `tool_result` blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
}

impl Role {
    /// The lower-case wire name (`user`, `assistant`, `system`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "system" => Some(Role::System),
            _ => None,
        }
    }
}

/// A message's content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

/// Whether a document-like block was a `document` or a `search_result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    Document,
    SearchResult,
}

/// One content block. Blocks recall does not interpret are kept verbatim in `raw` so that
/// storage and the native renderers give them back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: ToolResultContent,
        is_error: Option<bool>,
    },
    /// `document` or `search_result`; `label` is the `T` of `[referenced: T]`.
    Document {
        kind: DocumentKind,
        label: String,
        raw: Value,
    },
    /// An image, as an Anthropic `image` block or an OpenAI `image_url` part.
    Image {
        raw: Value,
    },
    /// Any other block type: stored as-is, ignored by text renderers.
    Other {
        raw: Value,
    },
}

/// The content of a `tool_result` block.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<Block>),
}

impl ToolResultContent {
    /// The result as text: a string as-is, blocks' texts joined with `"\n"` (`[image]` for
    /// images, nothing for others).
    pub fn text(&self) -> String {
        match self {
            ToolResultContent::Text(s) => s.clone(),
            ToolResultContent::Blocks(blocks) => {
                let mut parts: Vec<&str> = Vec::new();
                for b in blocks {
                    match b {
                        Block::Text { text } => parts.push(text),
                        Block::Image { .. } => parts.push("[image]"),
                        _ => {}
                    }
                }
                parts.join("\n")
            }
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: Content,
    /// Client idempotency key (`"id"` in the input).
    pub id: Option<String>,
    /// Free-form metadata object (`"metadata"` in the input).
    pub metadata: Option<Map<String, Value>>,
    /// The time the input gave (`"created_at"`, RFC 3339), in milliseconds since the Unix
    /// epoch, UTC ([`crate::time`]): an append stores it as given, and a message without one
    /// gets the store's clock. Only input carries it: a stored message's time is its
    /// record's, and reads leave this `None`. [`Message::to_json`] never writes it (no output
    /// format sends a time to a model); an export writes the stored time itself.
    pub created_at: Option<i64>,
}

impl Message {
    /// A message with string content and no id or metadata.
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: Content::Text(text.into()),
            id: None,
            metadata: None,
            created_at: None,
        }
    }

    /// A message with block content and no id or metadata.
    pub fn blocks(role: Role, blocks: Vec<Block>) -> Message {
        Message {
            role,
            content: Content::Blocks(blocks),
            id: None,
            metadata: None,
            created_at: None,
        }
    }

    /// The blocks of the message (empty for string content).
    /// Its string content, or its text blocks joined with `"\n"` (other blocks left out):
    /// the text of a system message, and what search and recall index.
    pub fn joined_text(&self) -> String {
        match &self.content {
            Content::Text(s) => s.clone(),
            Content::Blocks(b) => b
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    pub fn block_slice(&self) -> &[Block] {
        match &self.content {
            Content::Text(_) => &[],
            Content::Blocks(b) => b,
        }
    }

    /// True when any block is a `tool_use`.
    pub fn has_tool_use(&self) -> bool {
        self.block_slice()
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
    }

    /// True when any block is a `tool_result`.
    pub fn has_tool_result(&self) -> bool {
        self.block_slice()
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
    }

    /// True when the message has text of its own: non-blank string content, or a block that
    /// is not a tool block, thinking, or an unknown type (text, document, image).
    pub fn has_text(&self) -> bool {
        match &self.content {
            Content::Text(s) => !s.trim().is_empty(),
            Content::Blocks(blocks) => blocks.iter().any(|b| match b {
                Block::Text { text } => !text.trim().is_empty(),
                Block::Document { .. } | Block::Image { .. } => true,
                _ => false,
            }),
        }
    }

    /// A user message with text and no `tool_result`: the start of a turn that is never inside
    /// a tool pair, so history may be cut just before it.
    pub fn is_cut_point(&self) -> bool {
        self.role == Role::User && self.has_text() && !self.has_tool_result()
    }

    /// A user message with text: the start of a turn (docs/FORMATS.md §4.3).
    pub fn starts_turn(&self) -> bool {
        self.role == Role::User && self.has_text()
    }

    /// The canonical Anthropic-shaped JSON of the message, keys in a fixed order
    /// (`role`, `content`, then `id` and `metadata` when present).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("role".into(), Value::String(self.role.as_str().into()));
        m.insert("content".into(), content_json(&self.content));
        if let Some(id) = &self.id {
            m.insert("id".into(), Value::String(id.clone()));
        }
        if let Some(meta) = &self.metadata {
            m.insert("metadata".into(), Value::Object(meta.clone()));
        }
        Value::Object(m)
    }
}

/// The JSON of a content value: a string, or an array of block objects.
pub fn content_json(content: &Content) -> Value {
    match content {
        Content::Text(s) => Value::String(s.clone()),
        Content::Blocks(blocks) => Value::Array(blocks.iter().map(Block::to_json).collect()),
    }
}

impl Block {
    /// The Anthropic JSON of the block. Typed blocks are written with `type` first; kept
    /// blocks (documents, images, unknown types) are given back as they came.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        match self {
            Block::Text { text } => {
                m.insert("type".into(), "text".into());
                m.insert("text".into(), text.clone().into());
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                m.insert("type".into(), "thinking".into());
                m.insert("thinking".into(), thinking.clone().into());
                if let Some(s) = signature {
                    m.insert("signature".into(), s.clone().into());
                }
            }
            Block::RedactedThinking { data } => {
                m.insert("type".into(), "redacted_thinking".into());
                m.insert("data".into(), data.clone().into());
            }
            Block::ToolUse { id, name, input } => {
                m.insert("type".into(), "tool_use".into());
                m.insert("id".into(), id.clone().into());
                m.insert("name".into(), name.clone().into());
                m.insert("input".into(), input.clone());
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                m.insert("type".into(), "tool_result".into());
                m.insert("tool_use_id".into(), tool_use_id.clone().into());
                let c = match content {
                    ToolResultContent::Text(s) => Value::String(s.clone()),
                    ToolResultContent::Blocks(b) => {
                        Value::Array(b.iter().map(Block::to_json).collect())
                    }
                };
                m.insert("content".into(), c);
                if let Some(e) = is_error {
                    m.insert("is_error".into(), Value::Bool(*e));
                }
            }
            Block::Document { raw, .. } | Block::Other { raw } => return raw.clone(),
            Block::Image { raw } => return anthropic_image(raw),
        }
        Value::Object(m)
    }
}

/// An image block in Anthropic shape; OpenAI `image_url` parts are converted (a `data:` URL
/// becomes a base64 source).
pub fn anthropic_image(raw: &Value) -> Value {
    if raw.get("type").and_then(Value::as_str) != Some("image_url") {
        return raw.clone();
    }
    let url = raw
        .get("image_url")
        .and_then(|u| u.get("url").or(Some(u)))
        .and_then(Value::as_str)
        .unwrap_or("");
    let source = match parse_data_url(url) {
        Some((media_type, data)) => serde_json::json!({
            "type": "base64", "media_type": media_type, "data": data
        }),
        None => serde_json::json!({"type": "url", "url": url}),
    };
    let mut m = Map::new();
    m.insert("type".into(), "image".into());
    m.insert("source".into(), source);
    Value::Object(m)
}

/// An image as an OpenAI `image_url` content part; Anthropic sources are converted.
pub fn openai_image(raw: &Value) -> Value {
    if raw.get("type").and_then(Value::as_str) == Some("image_url") {
        return raw.clone();
    }
    let src = raw.get("source");
    let kind = src.and_then(|s| s.get("type")).and_then(Value::as_str);
    let url = match kind {
        Some("base64") => {
            let mt = src
                .and_then(|s| s.get("media_type"))
                .and_then(Value::as_str)
                .unwrap_or("image/png");
            let data = src
                .and_then(|s| s.get("data"))
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("data:{mt};base64,{data}")
        }
        _ => src
            .and_then(|s| s.get("url"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    let mut inner = Map::new();
    inner.insert("url".into(), url.into());
    let mut m = Map::new();
    m.insert("type".into(), "image_url".into());
    m.insert("image_url".into(), Value::Object(inner));
    Value::Object(m)
}

fn parse_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?;
    Some((media_type, data))
}
