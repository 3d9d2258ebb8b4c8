//! Glue to recall-core's renderers: a request's messages as the renderers' input.

use recall_core::extract::Measure;
use recall_core::{Block, Content, Kept, Message, Role};

use crate::error::BackendError;

/// The request's non-system messages as renderer input (no caps: selection already ran).
pub(crate) fn kept(messages: &[Message]) -> Vec<Kept> {
    messages
        .iter()
        .filter(|m| m.role != Role::System)
        .enumerate()
        .map(|(index, m)| Kept {
            index,
            message: m.clone(),
            truncated: false,
            measure: Measure::default(),
        })
        .collect()
}

/// Fails unless there is at least one non-system message.
pub(crate) fn require_messages(messages: &[Message]) -> Result<(), BackendError> {
    if messages.iter().any(|m| m.role != Role::System) {
        Ok(())
    } else {
        Err(BackendError::invalid_request(
            "no messages to send: the request needs at least one user message",
        ))
    }
}

/// A user message's own text: its string, or its text blocks joined with `"\n"` (documents
/// and images as their placeholders), as the `xml` format's current message.
pub(crate) fn user_text(m: &Message) -> String {
    match &m.content {
        Content::Text(s) => s.clone(),
        Content::Blocks(b) => b
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.clone()),
                Block::Document { label, .. } => Some(format!("[referenced: {label}]")),
                Block::Image { .. } => Some("[image]".to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}
