//! The text formats: `transcript`, `bracket`, `xml`, `task`.

use super::escape::maybe_escape;
use super::RenderInput;
use crate::extract::{role_upper, task_text, transcript_text};
use crate::message::{Block, Content, Role};

/// `Human: …` / `Assistant: …` joined by `\n\n---\n\n` (FORMATS.md §4.1).
pub fn render_transcript(input: &RenderInput<'_>) -> String {
    let mut out = String::new();
    for k in input.kept {
        let label = match k.message.role {
            Role::User => "Human: ",
            Role::Assistant => "Assistant: ",
            Role::System => continue,
        };
        // String content is borrowed, not copied (transcript_text would clone it).
        let owned;
        let text: &str = match &k.message.content {
            Content::Text(s) if s.trim().is_empty() => continue,
            Content::Text(s) => s,
            Content::Blocks(_) => match transcript_text(&k.message) {
                Some(t) => {
                    owned = t;
                    &owned
                }
                None => continue,
            },
        };
        if !out.is_empty() {
            out.push_str("\n\n---\n\n");
        }
        out.push_str(label);
        out.push_str(&maybe_escape(text, input.escape));
    }
    out
}

/// `[ROLE]: text` parts joined by a blank line, system parts first (FORMATS.md §4.2).
pub fn render_bracket(input: &RenderInput<'_>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut push = |label: &str, text: &str| {
        parts.push(format!("{label}: {}", maybe_escape(text, input.escape)));
    };
    for s in input.system_parts {
        if !s.trim().is_empty() {
            push("[SYSTEM]", s);
        }
    }
    for k in input.kept {
        let role = format!("[{}]", role_upper(k.message.role));
        match &k.message.content {
            Content::Text(s) => {
                if !s.trim().is_empty() {
                    push(&role, s);
                }
            }
            Content::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        Block::Text { text } if !text.trim().is_empty() => push(&role, text),
                        Block::ToolUse { name, .. } => push(&role, &format!("[used tool: {name}]")),
                        Block::ToolResult { content, .. } => push("[TOOL_RESULT]", &content.text()),
                        Block::Document { label, .. } => {
                            push(&role, &format!("[referenced: {label}]"))
                        }
                        Block::Image { .. } => push(&role, "[image]"),
                        _ => {}
                    }
                }
            }
        }
    }
    parts.join("\n\n")
}

/// One `xml` history line's speaker and text.
enum Turn {
    Human(String),
    Assistant(Vec<String>),
}

/// `<conversation_history>` … then the current message (FORMATS.md §4.3).
pub fn render_xml(input: &RenderInput<'_>) -> String {
    let mut turns: Vec<Turn> = Vec::new();
    for k in input.kept {
        let m = &k.message;
        match m.role {
            Role::System => continue,
            Role::User if m.starts_turn() => {
                // Results in a user turn belong to the assistant turn before it.
                let mut text_pieces: Vec<String> = Vec::new();
                let mut results: Vec<String> = Vec::new();
                match &m.content {
                    Content::Text(s) => text_pieces.push(s.clone()),
                    Content::Blocks(blocks) => {
                        for b in blocks {
                            match b {
                                Block::Text { text } => text_pieces.push(text.clone()),
                                Block::ToolResult { content, .. } => {
                                    results.push(format!("[Tool result: {}]", content.text()))
                                }
                                Block::Document { label, .. } => {
                                    text_pieces.push(format!("[referenced: {label}]"))
                                }
                                Block::Image { .. } => text_pieces.push("[image]".into()),
                                _ => {}
                            }
                        }
                    }
                }
                if !results.is_empty() {
                    match turns.last_mut() {
                        Some(Turn::Assistant(p)) => p.extend(results),
                        _ => turns.push(Turn::Assistant(results)),
                    }
                }
                turns.push(Turn::Human(text_pieces.join("\n")));
            }
            Role::User | Role::Assistant => {
                let mut pieces: Vec<String> = Vec::new();
                match &m.content {
                    Content::Text(s) => pieces.push(s.clone()),
                    Content::Blocks(blocks) => {
                        for b in blocks {
                            match b {
                                Block::Text { text } => pieces.push(text.clone()),
                                Block::ToolUse { name, .. } => {
                                    pieces.push(format!("[Used tool: {name}]"))
                                }
                                Block::ToolResult { content, .. } => {
                                    pieces.push(format!("[Tool result: {}]", content.text()))
                                }
                                Block::Document { label, .. } => {
                                    pieces.push(format!("[referenced: {label}]"))
                                }
                                Block::Image { .. } => pieces.push("[image]".into()),
                                _ => {}
                            }
                        }
                    }
                }
                match turns.last_mut() {
                    Some(Turn::Assistant(p)) => p.extend(pieces),
                    _ => turns.push(Turn::Assistant(pieces)),
                }
            }
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for t in turns {
        let (label, text) = match t {
            Turn::Human(s) => ("Human: ", s),
            Turn::Assistant(p) => ("Assistant: ", p.join("\n").trim().to_string()),
        };
        if text.trim().is_empty() {
            continue;
        }
        lines.push(format!("{label}{}", maybe_escape(&text, input.escape)));
    }
    let current = input
        .current
        .map(|c| maybe_escape(c, input.escape).into_owned())
        .unwrap_or_default();
    if lines.is_empty() {
        return current;
    }
    let mut out = String::from("<conversation_history>\n");
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out.push_str("</conversation_history>\n\nContinue the conversation. The human says:\n");
    out.push_str(&current);
    out
}

/// The header line of the `task` history section.
pub const TASK_HEADER: &str = "💬 CONVERSATION HISTORY (Context leading to this task):";

/// A sub-agent brief's history section (FORMATS.md §4.4).
pub fn render_task(input: &RenderInput<'_>) -> String {
    let mut out = String::from(TASK_HEADER);
    out.push('\n');
    let mut n = 0;
    let mut item = |emoji: &str, role: Role, truncated: bool, text: &str, out: &mut String| {
        n += 1;
        let flag = if truncated { " [TRUNCATED]" } else { "" };
        out.push_str(&format!("{n}. {emoji} {}{flag}:\n", role_upper(role)));
        for line in text.split('\n') {
            out.push_str("   ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    };
    if let Some(system) = input.system() {
        let s = system.trim();
        if !s.is_empty() {
            item("⚙️", Role::System, false, s, &mut out);
        }
    }
    for k in input.kept {
        let emoji = match k.message.role {
            Role::User => "👤",
            Role::Assistant => "🤖",
            Role::System => "⚙️",
        };
        let text = task_text(&k.message);
        if text.is_empty() {
            continue;
        }
        item(emoji, k.message.role, k.truncated, &text, &mut out);
    }
    out
}
