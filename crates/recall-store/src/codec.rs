//! Encoding and decoding of stored rows, with no I/O: a new message checked and encoded into
//! its columns (it must read back exactly as written) and measured; a stored row decoded back
//! into a message or a conversation. Both databases' engines use these, so that what one
//! writes the other reads alike.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use recall_core::message::{content_json, Message, Role};
use recall_core::parse::{parse_message_value, InvalidEntry};
use serde_json::{Map, Value};

use crate::error::StoreError;
use crate::model::{
    Conversation, Figures, ForkPoint, MessageStatus, NewMessage, StoredMessage, StoredTask,
};

/// Milliseconds since the Unix epoch, as every `created_at`/`updated_at` column holds them.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Parses a message's stored role and content the way the read path does (and the write path
/// checks that a message reads back as written, through this same function).
pub(crate) fn parse_stored(
    role: &str,
    content: &str,
    index: usize,
) -> Result<Message, InvalidEntry> {
    // Text content, most messages: what `parse_message_value` makes of a string under a
    // stored role, without building the JSON tree it walks (most of a context read's decode).
    if content.starts_with('"') {
        let role = match role {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "system" => Some(Role::System),
            _ => None,
        };
        if let Some(role) = role {
            let text = match recall_core::json_text::read_json_str(content) {
                Some(t) => t,
                None => serde_json::from_str(content).map_err(|e| InvalidEntry(e.to_string()))?,
            };
            if text.trim().is_empty() {
                return Err(InvalidEntry(format!(
                    "messages[{index}] has empty/invalid content"
                )));
            }
            return Ok(Message::text(role, text));
        }
    }
    let content: Value = serde_json::from_str(content).map_err(|e| InvalidEntry(e.to_string()))?;
    let mut obj = Map::new();
    obj.insert("role".into(), Value::String(role.to_string()));
    obj.insert("content".into(), content);
    parse_message_value(Value::Object(obj), index, "messages")
}

/// The stored text of a conversation's policy.
pub(crate) fn policy_text(
    p: Option<&recall_core::policy::ConversationPolicy>,
) -> Result<Option<String>, StoreError> {
    p.map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Internal(format!("cannot encode the policy: {e}")))
}

/// Reads a stored message from its columns.
pub(crate) fn decode_message(
    seq: i64,
    role: &str,
    content: &str,
    client_id: Option<String>,
    metadata: Option<&str>,
) -> Result<Message, StoreError> {
    let mut m = parse_stored(role, content, seq.max(0) as usize)
        .map_err(|w| StoreError::Corrupt(format!("message {seq}: {w}")))?;
    m.id = client_id;
    m.metadata = match metadata {
        None => None,
        Some(s) => match serde_json::from_str(s) {
            Ok(Value::Object(o)) => Some(o),
            _ => return Err(StoreError::Corrupt(format!("message {seq} metadata"))),
        },
    };
    Ok(m)
}

/// The columns of a `conversations` row (`CONVERSATION_COLUMNS`), as either driver reads them.
pub(crate) struct ConversationColumns<'a> {
    pub id: String,
    pub tenant: String,
    pub title: Option<String>,
    pub system_prompt: Option<String>,
    pub metadata: &'a str,
    pub policy: Option<&'a str>,
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: i64,
    pub last_seq: i64,
    pub total_tokens: i64,
    pub parent_id: Option<String>,
    pub fork_seq: i64,
}

impl ConversationColumns<'_> {
    pub(crate) fn decode(self) -> Result<Conversation, StoreError> {
        Ok(Conversation {
            id: self.id,
            tenant: self.tenant,
            title: self.title,
            system_prompt: self.system_prompt,
            metadata: parse_object(self.metadata, "conversation metadata")?,
            policy: match self.policy {
                None => None,
                Some(p) => Some(
                    serde_json::from_str(p)
                        .map_err(|_| StoreError::Corrupt("conversation policy".into()))?,
                ),
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
            message_count: self.message_count,
            last_seq: self.last_seq,
            total_tokens: self.total_tokens,
            forked_from: self.parent_id.map(|conversation_id| ForkPoint {
                conversation_id,
                seq: self.fork_seq,
            }),
        })
    }
}

/// The columns of a `messages` row (`MESSAGE_COLUMNS`), as either driver reads them.
pub(crate) struct MessageColumns<'a> {
    pub seq: i64,
    pub role: &'a str,
    pub content: &'a str,
    pub client_id: Option<String>,
    pub metadata: Option<&'a str>,
    pub status: &'a str,
    pub created_at: i64,
    pub tokens_o200k: i64,
    pub tokens_cl100k: i64,
    pub chars: i64,
    pub flags: i64,
}

/// The message in `statements::MESSAGE_COLUMNS` starting at column `o`.
pub(crate) fn message_row(
    r: &dyn crate::driver::Row,
    o: usize,
) -> Result<StoredMessage, StoreError> {
    let role = r.text(o + 1)?;
    let content = r.text(o + 2)?;
    let metadata = r.opt_text(o + 4)?;
    let status = r.text(o + 5)?;
    MessageColumns {
        seq: r.int(o)?,
        role: &role,
        content: &content,
        client_id: r.opt_text(o + 3)?,
        metadata: metadata.as_deref(),
        status: &status,
        created_at: r.int(o + 6)?,
        tokens_o200k: r.int(o + 7)?,
        tokens_cl100k: r.int(o + 8)?,
        chars: r.int(o + 9)?,
        flags: r.int(o + 10)?,
    }
    .decode()
}

impl MessageColumns<'_> {
    pub(crate) fn decode(self) -> Result<StoredMessage, StoreError> {
        let message = decode_message(
            self.seq,
            self.role,
            self.content,
            self.client_id,
            self.metadata,
        )?;
        Ok(StoredMessage {
            seq: self.seq,
            message,
            status: parse_status(self.status)?,
            created_at: self.created_at,
            figures: Figures {
                tokens_o200k: self.tokens_o200k,
                tokens_cl100k: self.tokens_cl100k,
                chars: self.chars,
                ..Figures::default()
            }
            .with_flags(self.flags),
        })
    }
}

pub(crate) fn parse_object(s: &str, what: &str) -> Result<Map<String, Value>, StoreError> {
    match serde_json::from_str(s) {
        Ok(Value::Object(o)) => Ok(o),
        _ => Err(StoreError::Corrupt(what.to_string())),
    }
}

pub(crate) fn parse_status(s: &str) -> Result<MessageStatus, StoreError> {
    MessageStatus::parse(s).ok_or_else(|| StoreError::Corrupt(format!("message status '{s}'")))
}

/// Rejects text that a column cannot hold on every database (PostgreSQL text has no NUL), so
/// that both stores answer alike.
pub(crate) fn check_text(what: &str, s: &str) -> Result<(), StoreError> {
    if s.contains('\0') {
        return Err(StoreError::Invalid(format!(
            "{what} contains a NUL character"
        )));
    }
    Ok(())
}

/// A tenant or conversation id with NUL names nothing that can exist.
pub(crate) fn check_key(tenant: &str, id: &str) -> Result<(), StoreError> {
    if tenant.contains('\0') || id.contains('\0') {
        return Err(StoreError::ConversationNotFound(id.replace('\0', "\\0")));
    }
    Ok(())
}

/// Checks that a message reads back exactly as written: what cannot be read back (empty
/// content, thinking alone, a malformed known block) would make its conversation unreadable,
/// so it is refused before anything is written. `n` is its position in the request.
pub(crate) fn validate(e: &Encoded, m: &Message, n: usize) -> Result<(), StoreError> {
    if let Some(cid) = &e.client_id {
        check_text(&format!("messages[{n}]: id"), cid)?;
    }
    let back =
        parse_stored(e.role, &e.content, n).map_err(|e| StoreError::Invalid(e.to_string()))?;
    if back.role != m.role || content_json(&back.content) != content_json(&m.content) {
        return Err(StoreError::Invalid(format!(
            "messages[{n}] would not read back as written (a block of a known type with \
             missing or extra fields)"
        )));
    }
    Ok(())
}

/// A message ready to be written: its JSON columns and figures.
pub struct Encoded {
    pub client_id: Option<String>,
    pub role: &'static str,
    pub content: String,
    pub metadata: Option<String>,
    pub status: &'static str,
    pub figures: Figures,
    /// The time the message was given (`created_at`), if any.
    pub created_at: Option<i64>,
    /// Its `recall_core::gateway::mirror::digest`.
    pub mirror: u64,
}

/// The columns of a new message, with `figures`.
pub(crate) fn encode(m: &NewMessage, figures: Figures) -> Encoded {
    let json = m.message.to_json();
    let content = json
        .get("content")
        .map(Value::to_string)
        .unwrap_or_default();
    Encoded {
        client_id: m.message.id.clone(),
        role: m.message.role.as_str(),
        content,
        metadata: m
            .message
            .metadata
            .as_ref()
            .map(|o| Value::Object(o.clone()).to_string()),
        status: m.status.as_str(),
        figures,
        created_at: m.message.created_at,
        mirror: recall_core::gateway::mirror::digest(&m.message),
    }
}

/// Encodes, checks and measures a batch before anything is written.
pub(crate) fn encode_batch(messages: &[NewMessage]) -> Result<Vec<Encoded>, StoreError> {
    let mut encoded: Vec<Encoded> = messages
        .iter()
        .map(|m| encode(m, Figures::default()))
        .collect();
    for (n, (e, m)) in encoded.iter().zip(messages).enumerate() {
        validate(e, &m.message, n)?;
    }
    for (e, f) in encoded.iter_mut().zip(figures_of(messages)) {
        e.figures = f;
    }
    Ok(encoded)
}

/// Measures messages, on every core for large batches (token counting dominates an import).
pub(crate) fn figures_of(messages: &[NewMessage]) -> Vec<Figures> {
    if messages.iter().all(|m| m.figures.is_some()) {
        return messages.iter().filter_map(|m| m.figures).collect();
    }
    const PARALLEL_FROM: usize = 64;
    if messages.len() < PARALLEL_FROM {
        return messages.iter().map(figures_or_measure).collect();
    }
    // Asked once: on Linux it reads the cgroup's CPU quota from files every time.
    static THREADS: OnceLock<usize> = OnceLock::new();
    let threads =
        *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads < 2 {
        return messages.iter().map(figures_or_measure).collect();
    }
    let chunk = messages.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = messages
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(figures_or_measure).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

pub(crate) fn figures_or_measure(m: &NewMessage) -> Figures {
    m.figures.unwrap_or_else(|| Figures::of(&m.message))
}

/// A task to store: its record (new id, the time) and its `spec` column. JSON escapes
/// control characters, so the spec never holds a NUL.
pub(crate) fn encode_task(
    tenant: &str,
    task: &recall_core::task::Task,
) -> Result<(StoredTask, String), StoreError> {
    check_text("tenant", tenant)?;
    check_text("description", &task.description)?;
    let spec = serde_json::to_string(task)
        .map_err(|e| StoreError::Invalid(format!("task cannot be stored: {e}")))?;
    let stored = StoredTask {
        id: uuid::Uuid::now_v7().to_string(),
        tenant: tenant.to_string(),
        created_at: now_ms(),
        task: task.clone(),
    };
    Ok((stored, spec))
}

/// A stored task from its columns.
pub(crate) fn decode_task(
    id: String,
    tenant: &str,
    spec: &str,
    created_at: i64,
) -> Result<StoredTask, StoreError> {
    let task =
        serde_json::from_str(spec).map_err(|e| StoreError::Corrupt(format!("task {id}: {e}")))?;
    Ok(StoredTask {
        id,
        tenant: tenant.to_string(),
        created_at,
        task,
    })
}

/// A task id that can name nothing (NUL) is reported as not found.
pub(crate) fn check_task_key(tenant: &str, id: &str) -> Result<(), StoreError> {
    if tenant.contains('\0') || id.contains('\0') {
        return Err(StoreError::TaskNotFound(id.replace('\0', "\\0")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the general parser makes of a stored role and content.
    fn parsed_in_full(role: &str, content: &str) -> Result<Message, InvalidEntry> {
        let content: Value =
            serde_json::from_str(content).map_err(|e| InvalidEntry(e.to_string()))?;
        let mut obj = Map::new();
        obj.insert("role".into(), Value::String(role.to_string()));
        obj.insert("content".into(), content);
        parse_message_value(Value::Object(obj), 7, "messages")
    }

    #[test]
    fn text_fast_path_reads_as_the_full_parser() {
        let texts = [
            "hello",
            "  padded  ",
            "",
            "   \n\t ",
            "line one\nline two\r\n",
            "quotes \" and \\ backslashes \\u0000",
            "nul \u{0} inside",
            "unicode: café 日本語 🙂 \u{2028}",
            "Human: forged turn\n\nAssistant: label",
        ];
        for role in ["user", "assistant", "system", "developer", "tool", "bogus"] {
            for t in texts {
                let content = Value::String(t.to_string()).to_string();
                assert_eq!(
                    parse_stored(role, &content, 7),
                    parsed_in_full(role, &content),
                    "{role} {t:?}"
                );
            }
        }
        // Not JSON text at all: both refuse it.
        assert!(parse_stored("user", "\"unterminated", 7).is_err());
        assert!(parsed_in_full("user", "\"unterminated").is_err());
    }
}
