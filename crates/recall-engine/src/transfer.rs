//! Import and export: whole conversations as JSON Lines (or any input shape `recall render`
//! reads), written in one transaction so a failed import stores nothing.

use crate::ConversationRef;
use std::io::Write;

use recall_core::parse::{parse_conversation, ParseOptions};
use recall_store::{Figures, MessageStatus, NewConversation, NewMessage};
use serde_json::{Map, Value};

use crate::{Engine, EngineError};

/// Where an import goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportTarget {
    /// A new conversation with this title (the input's top-level `system` becomes its system
    /// prompt).
    New { title: Option<String> },
    /// An existing conversation: messages are appended after its own.
    Existing(String),
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ImportReport {
    pub conversation_id: String,
    pub imported: usize,
    /// Duplicates of client ids already stored (not written again).
    pub duplicates: usize,
    pub skipped: usize,
    pub warnings: Vec<String>,
}

/// Progress callbacks: `(done, total)` while messages are measured.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

impl Engine {
    /// Imports a conversation from text (JSON Lines, a JSON array, or a `{"system",
    /// "messages"}` object; Anthropic- or OpenAI-shaped). In strict mode any invalid message
    /// rejects the whole input. A malformed JSON line is reported by number. Nothing is stored
    /// unless everything is; an input without one valid message is refused.
    pub async fn import(
        &self,
        tenant: &str,
        target: ImportTarget,
        input: &str,
        strict: bool,
        progress: Progress<'_>,
    ) -> Result<ImportReport, EngineError> {
        let opts = ParseOptions {
            strict,
            ..ParseOptions::default()
        };
        let mut conv = parse_conversation(input, &opts)?;
        let exported_prompt = take_exported_system_prompt(&mut conv);
        // Nothing valid is nothing to store: no empty conversation, no success. An export of
        // a conversation with a system prompt and no messages yet is that conversation.
        if conv.messages.is_empty() && !exported_prompt {
            return Err(EngineError::Invalid(match conv.warnings.first() {
                Some(first) if conv.skipped > 0 => format!(
                    "nothing to import: every message is invalid ({} skipped; first: {first})",
                    conv.skipped
                ),
                _ => "nothing to import: the input holds no messages".to_string(),
            }));
        }
        for im in &conv.messages {
            self.check_size(&im.message, || format!("messages[{}]", im.index))?;
        }
        // The input entry of each message, for a conflict's position.
        let entries: Vec<usize> = conv.messages.iter().map(|m| m.index).collect();
        let messages: Vec<recall_core::Message> =
            conv.messages.into_iter().map(|m| m.message).collect();
        let figures = measure_all(&messages, progress);
        let batch: Vec<NewMessage> = messages
            .into_iter()
            .zip(figures)
            .map(|(message, f)| NewMessage {
                message,
                status: MessageStatus::Complete,
                figures: Some(f),
            })
            .collect();

        let (id, created) = match target {
            ImportTarget::Existing(id) => {
                self.store.get_conversation(tenant, &id).await?;
                (id, false)
            }
            ImportTarget::New { title } => {
                let c = self
                    .store
                    .create_conversation(
                        tenant,
                        NewConversation {
                            title,
                            system_prompt: conv.system.clone(),
                            ..NewConversation::default()
                        },
                    )
                    .await?;
                (c.id, true)
            }
        };
        let mut batch = batch;
        let mut first_entry = 0;
        if !created {
            if let Some(system) = &conv.system {
                first_entry = 1;
                // At the time of the input's first message, so that a dated history imported
                // into a conversation does not start with a message newer than itself.
                let mut m = recall_core::Message::text(recall_core::Role::System, system.clone());
                m.created_at = batch.first().and_then(|n| n.message.created_at);
                batch.insert(0, NewMessage::complete(m));
            }
        }
        let appended = match self.store.append(tenant, &id, batch).await {
            Ok(a) => a,
            Err(e) => {
                if created {
                    // Leave nothing behind: the conversation was made for this import.
                    let _ = self.store.delete_conversation(tenant, &id, false).await;
                }
                // The system prompt added first is no entry of the input.
                return Err(crate::error::at_request(e, |i| {
                    i.checked_sub(first_entry)
                        .and_then(|i| entries.get(i).copied())
                        .unwrap_or(i)
                }));
            }
        };
        let duplicates = appended.iter().filter(|a| a.duplicate).count();
        Ok(ImportReport {
            conversation_id: id,
            imported: appended.len() - duplicates,
            duplicates,
            skipped: conv.skipped,
            warnings: conv.warnings,
        })
    }

    /// Writes a conversation as JSON Lines that [`Engine::import`] reads back to the same
    /// conversation: its system prompt first, as a system message marked
    /// `"metadata":{"system_prompt":true}` (so an import makes it the system prompt again, not
    /// a stored message, and any other reader still sees an ordinary system message; it has
    /// no time: it is the conversation's setting, not a message), then every message with its
    /// client id, metadata and `created_at` (RFC 3339, UTC, with milliseconds when it has
    /// some: an import keeps it, so export → import → export gives the same bytes). Returns
    /// the number of lines written.
    pub async fn export(
        &self,
        c: ConversationRef<'_>,
        out: &mut (dyn Write + Send),
    ) -> Result<usize, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        const PAGE: u32 = 1000;
        let conv = self.store.get_conversation(tenant, id).await?;
        let mut lines = 0;
        let io = |e: std::io::Error| EngineError::Invalid(format!("cannot write the export: {e}"));
        if let Some(system) = conv.system_prompt.as_ref().filter(|s| !s.is_empty()) {
            let mut m = Map::new();
            m.insert("role".into(), "system".into());
            m.insert("content".into(), Value::String(system.clone()));
            m.insert("metadata".into(), system_prompt_marker().into());
            writeln!(out, "{}", Value::Object(m)).map_err(io)?;
            lines += 1;
        }
        let mut after = 0;
        loop {
            let page = self.store.messages(tenant, id, after, PAGE).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for m in &page {
                let mut line = m.message.to_json();
                if let Value::Object(o) = &mut line {
                    o.insert(
                        "created_at".into(),
                        Value::String(recall_core::time::format_rfc3339(m.created_at)),
                    );
                }
                writeln!(out, "{line}").map_err(io)?;
                lines += 1;
            }
            if page.len() < PAGE as usize {
                break;
            }
        }
        out.flush().map_err(io)?;
        Ok(lines)
    }
}

/// The metadata that marks an exported system prompt line: `{"system_prompt": true}`.
fn system_prompt_marker() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("system_prompt".into(), Value::Bool(true));
    m
}

/// An export's first line, the conversation's system prompt (see [`Engine::export`]), taken
/// out of the messages and made the input's system prompt, after a top-level `system` if the
/// input had one. Only the first entry, only with exactly that marker: any other system
/// message is a message of the conversation and stays one. True when it took one.
fn take_exported_system_prompt(conv: &mut recall_core::parse::Conversation) -> bool {
    let Some(first) = conv.messages.first() else {
        return false;
    };
    let m = &first.message;
    let marked = first.index == 0
        && m.role == recall_core::Role::System
        && m.id.is_none()
        && m.metadata.as_ref() == Some(&system_prompt_marker());
    let recall_core::Content::Text(text) = &m.content else {
        return false;
    };
    if !marked {
        return false;
    }
    let text = text.clone();
    conv.messages.remove(0);
    conv.system = Some(match conv.system.take() {
        Some(top) if !top.is_empty() => format!("{top}\n{text}"),
        _ => text,
    });
    true
}

/// Measures every message on all cores, reporting progress.
fn measure_all(messages: &[recall_core::Message], progress: Progress<'_>) -> Vec<Figures> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let total = messages.len();
    let done = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(1);
    if total == 0 {
        return Vec::new();
    }
    let chunk = total.div_ceil(threads).max(1);
    let done_ref = &done;
    std::thread::scope(|s| {
        let handles: Vec<_> = messages
            .chunks(chunk)
            .map(|c| {
                s.spawn(move || {
                    let mut out = Vec::with_capacity(c.len());
                    for m in c {
                        out.push(Figures::of(m));
                        let n = done_ref.fetch_add(1, Ordering::Relaxed) + 1;
                        if n.is_multiple_of(256) || n == total {
                            progress(n, total);
                        }
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}
