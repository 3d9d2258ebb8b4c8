//! The native request bodies: `anthropic` (Messages API) and `openai` (chat completions).
//! Keys come out in a fixed order (recall-core builds serde_json with `preserve_order`), so
//! equal histories give equal bytes.

use serde_json::{Map, Value};

use super::RenderInput;
use crate::message::{content_json, openai_image, Block, Content, Role};

/// `{"system": S, "messages": [...]}`; thinking blocks survive only in the newest assistant
/// message (docs/FORMATS.md §5.5).
pub fn render_anthropic(input: &RenderInput<'_>) -> Value {
    let placed = input.placed();
    let newest_assistant = placed.iter().rposition(|m| m.role == Role::Assistant);
    let mut messages = Vec::with_capacity(placed.len());
    for (i, m) in placed.iter().enumerate() {
        if m.role == Role::System {
            continue;
        }
        let content = match &m.content {
            Content::Blocks(blocks) if Some(i) != newest_assistant => {
                let kept: Vec<Value> = blocks
                    .iter()
                    .filter(|b| {
                        !matches!(b, Block::Thinking { .. } | Block::RedactedThinking { .. })
                    })
                    .map(Block::to_json)
                    .collect();
                Value::Array(kept)
            }
            c => content_json(c),
        };
        let mut obj = Map::new();
        obj.insert("role".into(), m.role.as_str().into());
        obj.insert("content".into(), content);
        messages.push(Value::Object(obj));
    }
    let mut body = Map::new();
    if let Some(s) = input.system() {
        body.insert("system".into(), Value::String(s));
    }
    body.insert("messages".into(), Value::Array(messages));
    Value::Object(body)
}

/// `{"messages": [...]}` with a leading system message, assistant `tool_calls` and `tool`
/// messages (docs/FORMATS.md §5.6).
pub fn render_openai(input: &RenderInput<'_>) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let obj = |pairs: Vec<(&str, Value)>| {
        let mut m = Map::new();
        for (k, v) in pairs {
            m.insert(k.to_string(), v);
        }
        Value::Object(m)
    };
    if let Some(s) = input.system() {
        messages.push(obj(vec![("role", "system".into()), ("content", s.into())]));
    }
    for m in input.placed() {
        match (&m.content, m.role) {
            (_, Role::System) => continue,
            (Content::Text(s), role) => {
                messages.push(obj(vec![
                    ("role", role.as_str().into()),
                    ("content", s.clone().into()),
                ]));
            }
            (Content::Blocks(blocks), Role::Assistant) => {
                let mut text: Vec<String> = Vec::new();
                let mut calls: Vec<Value> = Vec::new();
                for b in blocks {
                    match b {
                        Block::Text { text: t } => text.push(t.clone()),
                        Block::ToolUse { id, name, input } => {
                            let arguments = match input {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            calls.push(obj(vec![
                                ("id", id.clone().into()),
                                ("type", "function".into()),
                                (
                                    "function",
                                    obj(vec![
                                        ("name", name.clone().into()),
                                        ("arguments", arguments.into()),
                                    ]),
                                ),
                            ]));
                        }
                        Block::Document { label, .. } => {
                            text.push(format!("[referenced: {label}]"))
                        }
                        Block::Image { .. } => text.push("[image]".into()),
                        _ => {}
                    }
                }
                let content = if text.is_empty() {
                    Value::Null
                } else {
                    Value::String(text.join("\n"))
                };
                let mut pairs = vec![("role", "assistant".into()), ("content", content)];
                if !calls.is_empty() {
                    pairs.push(("tool_calls", Value::Array(calls)));
                }
                messages.push(obj(pairs));
            }
            (Content::Blocks(blocks), Role::User) => {
                // Tool results first, as `tool` messages, then the user's own content.
                let mut parts: Vec<Value> = Vec::new();
                for b in blocks {
                    match b {
                        Block::ToolResult {
                            tool_use_id,
                            content,
                            ..
                        } => messages.push(obj(vec![
                            ("role", "tool".into()),
                            ("tool_call_id", tool_use_id.clone().into()),
                            ("content", content.text().into()),
                        ])),
                        Block::Text { text } => parts.push(obj(vec![
                            ("type", "text".into()),
                            ("text", text.clone().into()),
                        ])),
                        Block::Image { raw } => parts.push(openai_image(raw)),
                        Block::Document { label, .. } => parts.push(obj(vec![
                            ("type", "text".into()),
                            ("text", format!("[referenced: {label}]").into()),
                        ])),
                        _ => {}
                    }
                }
                if parts.is_empty() {
                    continue;
                }
                // A single text part is sent as a plain string, the common shape.
                let content = match parts.as_slice() {
                    [one] if one.get("type").and_then(Value::as_str) == Some("text") => {
                        one.get("text").cloned().unwrap_or(Value::Null)
                    }
                    _ => Value::Array(parts),
                };
                messages.push(obj(vec![("role", "user".into()), ("content", content)]));
            }
        }
    }
    obj(vec![("messages", Value::Array(messages))])
}
