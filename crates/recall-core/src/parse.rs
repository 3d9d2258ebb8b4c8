//! Reading a conversation: the accepted input shapes, OpenAI → Anthropic normalisation and
//! lenient or strict validation (docs/FORMATS.md §2–3).
//!
//! ```
//! use recall_core::parse::{parse_conversation, ParseOptions};
//! let input = r#"[{"role":"user","content":"Hi"},{"role":"user","content":""}]"#;
//! let conv = parse_conversation(input, &ParseOptions::default()).unwrap();
//! assert_eq!(conv.messages.len(), 1);
//! assert_eq!(conv.warnings, vec!["messages[1] has empty/invalid content, skipping"]);
//! ```

use serde_json::{Map, Value};

use crate::message::{Block, Content, DocumentKind, Message, Role, ToolResultContent};

/// How to read an input.
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// Reject the whole input at the first invalid entry instead of skipping it.
    pub strict: bool,
    /// The name used in warnings, as in `messages[3] ...`.
    pub label: String,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            strict: false,
            label: "messages".to_string(),
        }
    }
}

impl ParseOptions {
    /// Strict parsing with the default label.
    pub fn strict() -> Self {
        ParseOptions {
            strict: true,
            ..ParseOptions::default()
        }
    }
}

/// A message as read, with the index of the input entry it came from (for a normalised run of
/// OpenAI `tool` messages, the first of them).
#[derive(Debug, Clone, PartialEq)]
pub struct InputMessage {
    pub index: usize,
    pub message: Message,
}

/// A parsed conversation: the top-level system prompt (if any) and the valid messages in input
/// order, system messages included.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    pub system: Option<String>,
    pub messages: Vec<InputMessage>,
    /// Number of invalid entries skipped.
    pub skipped: usize,
    pub warnings: Vec<String>,
}

/// Why an input could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("input is empty: expected a JSON array of messages, an object with \"messages\", or JSON Lines")]
    Empty,
    #[error("input is not valid JSON: {0}")]
    Json(String),
    #[error("input line {line} is not valid JSON: {reason}")]
    JsonLine { line: usize, reason: String },
    #[error("input is not a conversation: {0}")]
    Shape(String),
    #[error("{0} (strict mode: the whole input is rejected)")]
    Strict(String),
}

/// Reads a conversation from text: a JSON array, a `{"system", "messages"}` object, or JSON
/// Lines. Invalid entries are skipped with a warning, or rejected in strict mode.
pub fn parse_conversation(input: &str, opts: &ParseOptions) -> Result<Conversation, ParseError> {
    let trimmed = input.trim_start_matches('\u{feff}').trim();
    if trimmed.is_empty() {
        return Err(ParseError::Empty);
    }
    // One JSON document first; if that fails and there are several lines, JSON Lines.
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) => conversation_from_value(v, opts),
        Err(whole_err) => {
            let lines: Vec<&str> = input.lines().collect();
            if lines.iter().filter(|l| !l.trim().is_empty()).count() < 2 {
                return Err(ParseError::Json(whole_err.to_string()));
            }
            let mut entries = Vec::new();
            for (n, line) in lines.iter().enumerate() {
                let l = line.trim();
                if l.is_empty() {
                    continue;
                }
                let v: Value = serde_json::from_str(l).map_err(|e| ParseError::JsonLine {
                    line: n + 1,
                    reason: e.to_string(),
                })?;
                entries.push(v);
            }
            messages_from_entries(None, entries, opts)
        }
    }
}

/// Reads a conversation from an already parsed JSON value (array or object).
pub fn conversation_from_value(v: Value, opts: &ParseOptions) -> Result<Conversation, ParseError> {
    match v {
        Value::Array(entries) => messages_from_entries(None, entries, opts),
        Value::Object(mut obj) => {
            if let Some(msgs) = obj.remove("messages") {
                let system = match obj.remove("system") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s),
                    Some(Value::Array(blocks)) => Some(system_blocks_text(&blocks)?),
                    Some(_) => {
                        return Err(ParseError::Shape(
                            "\"system\" must be a string or a list of text blocks".into(),
                        ))
                    }
                };
                match msgs {
                    Value::Array(entries) => messages_from_entries(system, entries, opts),
                    _ => Err(ParseError::Shape("\"messages\" must be a list".into())),
                }
            } else if obj.contains_key("role") {
                // A single message: the one-line JSON Lines case.
                messages_from_entries(None, vec![Value::Object(obj)], opts)
            } else {
                Err(ParseError::Shape(
                    "expected a JSON array of messages, an object with \"messages\", or JSON Lines"
                        .into(),
                ))
            }
        }
        other => Err(ParseError::Shape(format!(
            "expected a JSON array of messages, an object with \"messages\", or JSON Lines, found {}",
            json_kind(&other)
        ))),
    }
}

fn system_blocks_text(blocks: &[Value]) -> Result<String, ParseError> {
    let mut parts = Vec::new();
    for b in blocks {
        match b.get("text").and_then(Value::as_str) {
            Some(t) => parts.push(t.to_string()),
            None => {
                return Err(ParseError::Shape(
                    "\"system\" blocks must be text blocks with a \"text\" string".into(),
                ))
            }
        }
    }
    Ok(parts.join("\n"))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn messages_from_entries(
    system: Option<String>,
    entries: Vec<Value>,
    opts: &ParseOptions,
) -> Result<Conversation, ParseError> {
    let mut conv = Conversation {
        system,
        ..Conversation::default()
    };
    // A run of OpenAI `tool` messages is gathered here and becomes one user message, at the
    // time of the run's first message.
    let mut tool_run: Option<(usize, Vec<Block>, Option<i64>)> = None;
    for (i, entry) in entries.into_iter().enumerate() {
        let parsed = parse_entry(entry, i, &opts.label);
        match parsed {
            Err(problem) => {
                if opts.strict {
                    return Err(ParseError::Strict(problem.to_string()));
                }
                conv.skipped += 1;
                conv.warnings.push(problem.warning());
            }
            Ok(Parsed::ToolResult(block, at)) => match &mut tool_run {
                Some((_, blocks, _)) => blocks.push(block),
                None => tool_run = Some((i, vec![block], at)),
            },
            Ok(Parsed::Message(m)) => {
                if let Some(run) = tool_run.take() {
                    conv.messages.push(tool_run_message(run));
                }
                conv.messages.push(InputMessage {
                    index: i,
                    message: m,
                });
            }
        }
    }
    if let Some(run) = tool_run.take() {
        conv.messages.push(tool_run_message(run));
    }
    Ok(conv)
}

/// The user message a run of OpenAI `tool` messages becomes.
fn tool_run_message((index, blocks, created_at): (usize, Vec<Block>, Option<i64>)) -> InputMessage {
    let mut message = Message::blocks(Role::User, blocks);
    message.created_at = created_at;
    InputMessage { index, message }
}

enum Parsed {
    Message(Message),
    /// An OpenAI `tool` message, as a `tool_result` block, and its time.
    ToolResult(Block, Option<i64>),
}

/// What is wrong with one entry of the input, naming it (`messages[3] has empty/invalid
/// content`). Lenient parsing skips the entry and warns ([`InvalidEntry::warning`]); strict
/// parsing and single-message appends refuse it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidEntry(pub String);

impl InvalidEntry {
    /// The warning of lenient parsing: the problem, then `, skipping`.
    pub fn warning(&self) -> String {
        format!("{}, skipping", self.0)
    }
}

/// Parses one message object, or says what is wrong with it.
pub fn parse_message_value(v: Value, index: usize, label: &str) -> Result<Message, InvalidEntry> {
    match parse_entry(v, index, label)? {
        Parsed::Message(m) => Ok(m),
        Parsed::ToolResult(b, at) => {
            let mut m = Message::blocks(Role::User, vec![b]);
            m.created_at = at;
            Ok(m)
        }
    }
}

fn parse_entry(v: Value, i: usize, label: &str) -> Result<Parsed, InvalidEntry> {
    let Value::Object(mut obj) = v else {
        return Err(InvalidEntry(format!("{label}[{i}] is not a dict")));
    };
    let has_tool_calls = matches!(obj.get("tool_calls"), Some(Value::Array(a)) if !a.is_empty());
    let content_missing = !obj.contains_key("content")
        || (obj.get("content") == Some(&Value::Null) && !has_tool_calls);
    if !obj.contains_key("role") || (content_missing && !has_tool_calls) {
        return Err(InvalidEntry(format!(
            "{label}[{i}] missing 'role' or 'content'"
        )));
    }
    let role_v = obj.remove("role").unwrap_or(Value::Null);
    let role_name = match &role_v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let invalid_role = || InvalidEntry(format!("{label}[{i}] has invalid role '{role_name}'"));
    let empty = || InvalidEntry(format!("{label}[{i}] has empty/invalid content"));

    let id = match obj.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => {
            return Err(InvalidEntry(format!(
                "{label}[{i}] has an invalid 'id' (expected a string)"
            )))
        }
    };
    let metadata = match obj.remove("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => {
            return Err(InvalidEntry(format!(
                "{label}[{i}] has invalid 'metadata' (expected an object)"
            )))
        }
    };
    let created_at = match obj.remove("created_at") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(crate::time::parse_rfc3339(&s).map_err(|why| {
            InvalidEntry(format!(
                "{label}[{i}] has an invalid 'created_at' ({why}; expected an RFC 3339 time \
                 such as 2023-05-08T13:56:00Z)"
            ))
        })?),
        Some(_) => {
            return Err(InvalidEntry(format!(
                "{label}[{i}] has an invalid 'created_at' (expected an RFC 3339 time such as \
                 2023-05-08T13:56:00Z)"
            )))
        }
    };

    let content_v = obj.remove("content").unwrap_or(Value::Null);
    let role = match role_name.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" | "developer" => Role::System,
        "tool" => {
            let tool_call_id = match obj.get("tool_call_id").and_then(Value::as_str) {
                Some(s) if !s.is_empty() => s.to_string(),
                _ => {
                    return Err(InvalidEntry(format!(
                        "{label}[{i}] is a tool message without 'tool_call_id'"
                    )))
                }
            };
            let content = match content_v {
                Value::String(s) => ToolResultContent::Text(s),
                Value::Array(parts) => {
                    ToolResultContent::Blocks(parse_blocks(parts, Role::User).ok_or_else(empty)?)
                }
                Value::Null => ToolResultContent::Text(String::new()),
                _ => return Err(empty()),
            };
            return Ok(Parsed::ToolResult(
                Block::ToolResult {
                    tool_use_id: tool_call_id,
                    content,
                    is_error: None,
                },
                created_at,
            ));
        }
        _ => return Err(invalid_role()),
    };

    let mut content = match content_v {
        Value::String(s) => Content::Text(s),
        Value::Array(blocks) => Content::Blocks(parse_blocks(blocks, role).ok_or_else(empty)?),
        Value::Null => Content::Blocks(Vec::new()),
        _ => return Err(empty()),
    };

    if role == Role::Assistant && has_tool_calls {
        let calls = match obj.remove("tool_calls") {
            Some(Value::Array(c)) => c,
            _ => Vec::new(),
        };
        let mut blocks = match content {
            Content::Text(s) if s.is_empty() => Vec::new(),
            Content::Text(s) => vec![Block::Text { text: s }],
            Content::Blocks(b) => b,
        };
        for call in calls {
            blocks.push(
                parse_tool_call(&call).ok_or_else(|| {
                    InvalidEntry(format!("{label}[{i}] has an invalid tool call"))
                })?,
            );
        }
        content = Content::Blocks(blocks);
    }

    let message = Message {
        role,
        content,
        id,
        metadata,
        created_at,
    };
    if !has_substance(&message) {
        return Err(empty());
    }
    Ok(Parsed::Message(message))
}

/// Not empty after extraction: some non-blank text, a document or image, a tool block, or an
/// unknown block kept for native formats.
fn has_substance(m: &Message) -> bool {
    match &m.content {
        Content::Text(s) => !s.trim().is_empty(),
        Content::Blocks(blocks) => blocks.iter().any(|b| match b {
            Block::Text { text } => !text.trim().is_empty(),
            Block::Thinking { .. } | Block::RedactedThinking { .. } => false,
            _ => true,
        }),
    }
}

fn parse_tool_call(call: &Value) -> Option<Block> {
    let id = call.get("id")?.as_str()?.to_string();
    let f = call.get("function")?;
    let name = f.get("name")?.as_str()?.to_string();
    let input = match f.get("arguments") {
        Some(Value::String(s)) => {
            serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(other) => other.clone(),
    };
    Some(Block::ToolUse { id, name, input })
}

/// Parses a block list; `None` when any block is malformed.
fn parse_blocks(blocks: Vec<Value>, role: Role) -> Option<Vec<Block>> {
    blocks.into_iter().map(|b| parse_block(b, role)).collect()
}

fn str_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_string)
}

fn parse_block(v: Value, role: Role) -> Option<Block> {
    let Value::Object(obj) = v else {
        return None;
    };
    let ty = obj.get("type")?.as_str()?.to_string();
    let block = match ty.as_str() {
        "text" | "input_text" | "output_text" => Block::Text {
            text: str_field(&obj, "text")?,
        },
        "thinking" => Block::Thinking {
            thinking: str_field(&obj, "thinking")?,
            signature: str_field(&obj, "signature"),
        },
        "redacted_thinking" => Block::RedactedThinking {
            data: str_field(&obj, "data")?,
        },
        "tool_use" => Block::ToolUse {
            id: str_field(&obj, "id")?,
            name: str_field(&obj, "name")?,
            input: obj
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Map::new())),
        },
        "tool_result" => {
            let content = match obj.get("content") {
                None | Some(Value::Null) => ToolResultContent::Text(String::new()),
                Some(Value::String(s)) => ToolResultContent::Text(s.clone()),
                Some(Value::Array(parts)) => {
                    ToolResultContent::Blocks(parse_blocks(parts.clone(), role)?)
                }
                Some(_) => return None,
            };
            Block::ToolResult {
                tool_use_id: str_field(&obj, "tool_use_id")?,
                content,
                is_error: obj.get("is_error").and_then(Value::as_bool),
            }
        }
        "document" | "search_result" => {
            let kind = if ty == "document" {
                DocumentKind::Document
            } else {
                DocumentKind::SearchResult
            };
            let label = document_label(&obj);
            Block::Document {
                kind,
                label,
                raw: Value::Object(obj),
            }
        }
        "image" | "image_url" => Block::Image {
            raw: Value::Object(obj),
        },
        _ => Block::Other {
            raw: Value::Object(obj),
        },
    };
    Some(block)
}

/// `T` of `[referenced: T]`: the title, else the source's file name or URL, else `document`.
fn document_label(obj: &Map<String, Value>) -> String {
    if let Some(t) = obj.get("title").and_then(Value::as_str) {
        if !t.trim().is_empty() {
            return t.to_string();
        }
    }
    let src = obj.get("source");
    if let Some(s) = src.and_then(Value::as_str) {
        if !s.trim().is_empty() {
            return s.to_string();
        }
    }
    if let Some(s) = src {
        for key in ["url", "file_name", "filename", "name", "path", "file_id"] {
            if let Some(v) = s.get(key).and_then(Value::as_str) {
                if !v.trim().is_empty() {
                    return v.to_string();
                }
            }
        }
    }
    "document".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Conversation {
        parse_conversation(s, &ParseOptions::default()).expect("parses")
    }

    #[test]
    fn openai_tool_run_becomes_one_user_message() {
        let c = parse(
            r#"[{"role":"user","content":"q"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
              {"id":"b","type":"function","function":{"name":"g","arguments":"not json"}}]},
            {"role":"tool","tool_call_id":"a","content":"1"},
            {"role":"tool","tool_call_id":"b","content":"2"},
            {"role":"assistant","content":"done"}]"#,
        );
        assert_eq!(c.messages.len(), 4);
        assert_eq!(c.messages[2].index, 2);
        let blocks = c.messages[2].message.block_slice();
        assert_eq!(blocks.len(), 2);
        match &c.messages[1].message.block_slice()[1] {
            Block::ToolUse { input, .. } => assert_eq!(input, &Value::String("not json".into())),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn developer_is_system_and_jsonl_is_read() {
        let c = parse("{\"role\":\"developer\",\"content\":\"be brief\"}\n\n{\"role\":\"user\",\"content\":\"hi\"}\n");
        assert_eq!(c.messages[0].message.role, Role::System);
        assert_eq!(c.messages.len(), 2);
    }

    #[test]
    fn bad_jsonl_line_is_named() {
        let e = parse_conversation(
            "{\"role\":\"user\",\"content\":\"a\"}\n{oops\n",
            &ParseOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(e, ParseError::JsonLine { line: 2, .. }), "{e}");
    }

    #[test]
    fn seed_003_warning_texts() {
        let c = parse(
            r#"[{"role":"user","content":"Valid message"},{"invalid":"structure"},
                {"role":"user","content":""},{"role":"invalid_role","content":"test"},null]"#,
        );
        assert_eq!(
            c.warnings,
            vec![
                "messages[1] missing 'role' or 'content', skipping",
                "messages[2] has empty/invalid content, skipping",
                "messages[3] has invalid role 'invalid_role', skipping",
                "messages[4] is not a dict, skipping",
            ]
        );
        assert_eq!(c.skipped, 4);
        assert_eq!(c.messages.len(), 1);
    }

    #[test]
    fn strict_rejects_whole_input() {
        let e = parse_conversation(
            r#"[{"role":"user","content":"ok"},{"role":"user","content":"  "}]"#,
            &ParseOptions::strict(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "messages[1] has empty/invalid content (strict mode: the whole input is rejected)"
        );
    }

    #[test]
    fn tool_only_messages_are_not_empty_but_thinking_only_is() {
        let c = parse(
            r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},
                {"role":"assistant","content":[{"type":"thinking","thinking":"hm"}]}]"#,
        );
        assert_eq!(c.messages.len(), 1);
        assert_eq!(c.skipped, 1);
    }

    #[test]
    fn created_at_is_read_and_a_bad_one_named() {
        let c = parse(
            r#"[{"role":"user","content":"a","created_at":"2023-05-08T13:56:00Z"},
                {"role":"assistant","content":"b","created_at":null},
                {"role":"user","content":"c","created_at":"yesterday"},
                {"role":"user","content":"d","created_at":1683554160},
                {"role":"assistant","content":null,"tool_calls":[
                  {"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},
                {"role":"tool","tool_call_id":"t","content":"1","created_at":"2023-05-08T13:57:00+01:00"}]"#,
        );
        assert_eq!(c.messages[0].message.created_at, Some(1_683_554_160_000));
        assert_eq!(c.messages[1].message.created_at, None);
        assert_eq!(
            c.warnings,
            vec![
                "messages[2] has an invalid 'created_at' (a digit was expected; expected an \
                 RFC 3339 time such as 2023-05-08T13:56:00Z), skipping",
                "messages[3] has an invalid 'created_at' (expected an RFC 3339 time such as \
                 2023-05-08T13:56:00Z), skipping",
            ]
        );
        // A run of tool messages takes its first message's time.
        assert_eq!(
            c.messages[3].message.created_at,
            Some(1_683_554_160_000 - 3_600_000 + 60_000)
        );
        let e = parse_message_value(
            serde_json::json!({"role":"user","content":"x","created_at":"2023-05-08"}),
            4,
            "messages",
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("messages[4] has an invalid 'created_at'"),
            "{e}"
        );
    }

    #[test]
    fn top_level_shapes() {
        assert!(matches!(
            parse_conversation("42", &ParseOptions::default()),
            Err(ParseError::Shape(_))
        ));
        assert!(matches!(
            parse_conversation("", &ParseOptions::default()),
            Err(ParseError::Empty)
        ));
        let c = parse(
            r#"{"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"messages":[]}"#,
        );
        assert_eq!(c.system.as_deref(), Some("a\nb"));
    }
}
