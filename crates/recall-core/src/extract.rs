//! Text extraction: how each text format turns a message into text (docs/FORMATS.md §5), and
//! the per-message measure that selection budgets against (§4.2).

use crate::message::{Block, Content, Message, Role};
use crate::tokens::TokenCounter;

/// The transcript annotation of a `tool_use` block.
pub fn transcript_tool_annotation(name: &str) -> &'static str {
    if name.contains("search_documents") {
        "[searched documents]"
    } else {
        "[performed an action]"
    }
}

/// The `transcript` text of a message, or `None` when it has nothing to render: tool
/// annotations accompany text but never make a message renderable on their own.
pub fn transcript_text(m: &Message) -> Option<String> {
    match &m.content {
        Content::Text(s) => (!s.trim().is_empty()).then(|| s.clone()),
        Content::Blocks(blocks) => {
            let mut pieces: Vec<String> = Vec::new();
            let mut has_own_text = false;
            for b in blocks {
                match b {
                    Block::Text { text } => {
                        if !text.trim().is_empty() {
                            has_own_text = true;
                        }
                        pieces.push(text.clone());
                    }
                    Block::ToolUse { name, .. } => {
                        pieces.push(transcript_tool_annotation(name).to_string())
                    }
                    Block::Document { label, .. } => {
                        has_own_text = true;
                        pieces.push(format!("[referenced: {label}]"));
                    }
                    Block::Image { .. } => {
                        has_own_text = true;
                        pieces.push("[image]".to_string());
                    }
                    _ => {}
                }
            }
            let text = pieces.join("\n");
            (has_own_text && !text.trim().is_empty()).then_some(text)
        }
    }
}

/// The `task` text of a message (text, `[used tool: NAME]`, `[referenced: T]`, `[image]`),
/// stripped of surrounding whitespace; empty when there is none.
pub fn task_text(m: &Message) -> String {
    match &m.content {
        Content::Text(s) => s.trim().to_string(),
        Content::Blocks(blocks) => {
            let mut pieces: Vec<String> = Vec::new();
            for b in blocks {
                match b {
                    Block::Text { text } => pieces.push(text.clone()),
                    Block::ToolUse { name, .. } => pieces.push(format!("[used tool: {name}]")),
                    Block::Document { label, .. } => pieces.push(format!("[referenced: {label}]")),
                    Block::Image { .. } => pieces.push("[image]".to_string()),
                    _ => {}
                }
            }
            pieces.join("\n").trim().to_string()
        }
    }
}

/// What selection budgets against, for one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measure {
    /// Tokens: the measured text's tokens plus 4.
    pub tokens: u64,
    /// Unicode scalar values of the measured text.
    pub chars: u64,
}

/// Per-message overhead added to every token count.
pub const MESSAGE_TOKEN_OVERHEAD: u64 = 4;

/// The text a message is measured by: its `transcript` extraction pieces (text, tool
/// annotations, references, images) followed by the JSON text of each `tool_use` input and
/// the text of each `tool_result`, all joined with `"\n"`. Unlike rendering, a message with
/// only tool blocks still has a measure.
pub fn measured_text(m: &Message) -> String {
    match &m.content {
        Content::Text(s) => s.clone(),
        Content::Blocks(blocks) => {
            let mut pieces: Vec<String> = Vec::new();
            let mut tool_json: Vec<String> = Vec::new();
            for b in blocks {
                match b {
                    Block::Text { text } => pieces.push(text.clone()),
                    Block::ToolUse { name, input, .. } => {
                        pieces.push(transcript_tool_annotation(name).to_string());
                        tool_json.push(input.to_string());
                    }
                    Block::ToolResult { content, .. } => tool_json.push(content.text()),
                    Block::Document { label, .. } => pieces.push(format!("[referenced: {label}]")),
                    Block::Image { .. } => pieces.push("[image]".to_string()),
                    _ => {}
                }
            }
            pieces.extend(tool_json);
            pieces.join("\n")
        }
    }
}

/// Measures a message with a token counter.
///
/// ```
/// use recall_core::{extract::measure, message::{Message, Role}, tokens::Tokenizer};
/// let m = measure(&Message::text(Role::User, "abcdefgh"), &Tokenizer::Chars4);
/// assert_eq!((m.tokens, m.chars), (2 + 4, 8));
/// ```
pub fn measure(m: &Message, counter: &dyn TokenCounter) -> Measure {
    let text = measured_text(m);
    Measure {
        tokens: counter.count(&text) as u64 + MESSAGE_TOKEN_OVERHEAD,
        chars: text.chars().count() as u64,
    }
}

/// Characters of a message's own text (string content or text blocks), the part per-role
/// caps apply to.
pub fn own_text_chars(m: &Message) -> usize {
    match &m.content {
        Content::Text(s) => s.chars().count(),
        Content::Blocks(b) => b
            .iter()
            .map(|b| match b {
                Block::Text { text } => text.chars().count(),
                _ => 0,
            })
            .sum(),
    }
}

/// Label of a role in upper case, as `bracket` and `task` write it.
pub fn role_upper(role: Role) -> &'static str {
    match role {
        Role::User => "USER",
        Role::Assistant => "ASSISTANT",
        Role::System => "SYSTEM",
    }
}
