//! The store's records.

use recall_core::extract::{measure, measured_text, Measure, MESSAGE_TOKEN_OVERHEAD};
use recall_core::message::Message;
use recall_core::policy::ConversationPolicy;
use recall_core::tokens::{TokenCounter, Tokenizer};
use serde_json::{Map, Value};

/// Whether a stored message is whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    /// A finished message.
    Complete,
    /// A streamed reply that was interrupted: what arrived, never presented as complete.
    Partial,
    /// Redacted: its content and metadata were removed ([`crate::Store::redact_message`]);
    /// the row keeps its seq and role and reads as [`REDACTED_TEXT`].
    Redacted,
}

/// The text a redacted message reads as.
pub const REDACTED_TEXT: &str = "[redacted]";

impl MessageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Complete => "complete",
            MessageStatus::Partial => "partial",
            MessageStatus::Redacted => "redacted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "complete" => Some(MessageStatus::Complete),
            "partial" => Some(MessageStatus::Partial),
            "redacted" => Some(MessageStatus::Redacted),
            _ => None,
        }
    }
}

/// What a new conversation starts with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewConversation {
    pub title: Option<String>,
    pub system_prompt: Option<String>,
    pub metadata: Map<String, Value>,
    /// The default context policy (an optional format and policy values), stored as its
    /// JSON.
    pub policy: Option<ConversationPolicy>,
}

/// A stored conversation.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Conversation {
    pub id: String,
    pub tenant: String,
    pub title: Option<String>,
    pub system_prompt: Option<String>,
    pub metadata: Map<String, Value>,
    pub policy: Option<ConversationPolicy>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: i64,
    /// The highest `seq` ever assigned (clearing does not reset it).
    pub last_seq: i64,
    /// Tokens (o200k) of the present history messages (system messages are not counted: they
    /// join the system prompt and no budget applies to them).
    pub total_tokens: i64,
    /// Where this conversation was forked from, if it is a fork: its history is the parent's
    /// messages up to that seq, then its own.
    pub forked_from: Option<ForkPoint>,
}

/// The point a fork was made at: the conversation whose history it reads up to `seq`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ForkPoint {
    pub conversation_id: String,
    pub seq: i64,
}

/// What a fork starts with besides its parent's history: a title of its own (else the
/// parent's). The system prompt, metadata and default policy are the parent's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewFork {
    pub title: Option<String>,
}

/// Changes to a conversation's settings; `None` leaves a field as it is. A policy change
/// resets the conversation's stable windows (they were computed under the old policy).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConversationUpdate {
    /// A new title; `Some(None)` removes it.
    pub title: Option<Option<String>>,
    /// A new system prompt; `Some(None)` removes it.
    pub system_prompt: Option<Option<String>>,
    /// New metadata (replaces the old object).
    pub metadata: Option<Map<String, Value>>,
    /// A new default policy; `Some(None)` removes it.
    pub policy: Option<Option<ConversationPolicy>>,
}

/// A message to append.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    /// The message; its `id` is the client idempotency key.
    pub message: Message,
    pub status: MessageStatus,
    /// Figures the caller already computed (an import measures in parallel before writing);
    /// the store measures the message when `None`.
    pub figures: Option<Figures>,
}

impl NewMessage {
    /// A complete message, measured by the store.
    pub fn complete(message: Message) -> Self {
        NewMessage {
            message,
            status: MessageStatus::Complete,
            figures: None,
        }
    }
}

/// A message as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub seq: i64,
    pub message: Message,
    pub status: MessageStatus,
    pub created_at: i64,
    pub figures: Figures,
}

/// A history's mirror sums (`recall_core::gateway::mirror`), as the gateway checks a
/// client's mirrored history against the stored one: [`crate::Store::mirror_sums`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorSums {
    /// The conversation's last seq and message count when read (the history is the seqs
    /// `last_seq - count + 1 ..= last_seq`).
    pub last_seq: i64,
    pub count: i64,
    /// The sum of the whole history; `None` when it was stored before sums were kept.
    pub total: Option<i64>,
    /// The sum of the history up to the seq asked for (0 before its first message).
    pub at: Option<i64>,
    /// The seqs of the redacted messages after that seq, in order.
    pub redacted: Vec<i64>,
}

/// The outcome of one append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Appended {
    pub seq: i64,
    /// True when the client id was seen before: nothing was written and `seq` is the first
    /// append's.
    pub duplicate: bool,
}

/// Per-message figures kept with every message, computed once at append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    pub tokens_o200k: i64,
    pub tokens_cl100k: i64,
    /// Unicode scalar values of the measured text.
    pub chars: i64,
    pub starts_turn: bool,
    pub cut_point: bool,
}

impl Figures {
    /// Measures a message (both vocabularies and characters).
    pub fn of(m: &Message) -> Figures {
        let text = measured_text(m);
        let o200k = Tokenizer::O200k.count(&text) as u64 + MESSAGE_TOKEN_OVERHEAD;
        let cl100k = Tokenizer::Cl100k.count(&text) as u64 + MESSAGE_TOKEN_OVERHEAD;
        Figures {
            tokens_o200k: o200k as i64,
            tokens_cl100k: cl100k as i64,
            chars: text.chars().count() as i64,
            starts_turn: m.starts_turn(),
            cut_point: m.is_cut_point(),
        }
    }

    /// `chars4` tokens: ceil(chars / 4) plus the per-message overhead.
    pub fn tokens_chars4(&self) -> i64 {
        (self.chars as u64).div_ceil(4) as i64 + MESSAGE_TOKEN_OVERHEAD as i64
    }

    /// Tokens under `t`.
    pub fn tokens(&self, t: Tokenizer) -> i64 {
        match t {
            Tokenizer::O200k => self.tokens_o200k,
            Tokenizer::Cl100k => self.tokens_cl100k,
            Tokenizer::Chars4 => self.tokens_chars4(),
        }
    }

    /// The core measure under `t`.
    pub fn measure(&self, t: Tokenizer) -> Measure {
        Measure {
            tokens: self.tokens(t).max(0) as u64,
            chars: self.chars.max(0) as u64,
        }
    }

    pub(crate) fn flags(&self) -> i64 {
        (self.starts_turn as i64) | ((self.cut_point as i64) << 1)
    }

    pub(crate) fn with_flags(mut self, flags: i64) -> Self {
        self.starts_turn = flags & 1 != 0;
        self.cut_point = flags & 2 != 0;
        self
    }
}

/// Measures with the core function (used by tests to check the cached figures).
pub fn core_measure(m: &Message, t: Tokenizer) -> Measure {
    measure(m, &t)
}

/// A stored sub-agent task.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTask {
    pub id: String,
    pub tenant: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// The validated task: description, context, capped history, warnings.
    pub task: recall_core::task::Task,
}

/// One message found by a full-text search.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SearchHit {
    pub conversation_id: String,
    pub seq: i64,
    pub role: String,
    /// The matching passage, matched words wrapped in `**`.
    pub snippet: String,
}

/// Recall's ranked hits from a store (see `recall_core::recall`), best first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecallHits {
    pub hits: Vec<recall_core::recall::Ranked>,
    /// False when the index did not cover every message recall may reach (vectors still
    /// being computed): what was indexed was ranked.
    pub complete: bool,
}

/// A message not embedded yet (`Store::vector_backlog`).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorTodo {
    pub conversation_id: String,
    pub seq: i64,
    pub message: Message,
}

/// Which conversations [`crate::Store::vector_status`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorScope<'a> {
    /// Every conversation of every tenant.
    Store,
    /// Every conversation of one tenant.
    Tenant(&'a str),
    /// One conversation.
    Conversation(ConversationRef<'a>),
}

/// How far the vectors of one model are over a [`VectorScope`]: what is left to embed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct VectorStatus {
    /// Conversations with messages not embedded yet.
    pub conversations_behind: u64,
    /// Messages not embedded yet (system messages included: the catch-up passes them).
    pub messages_behind: u64,
}

/// A message's vector to save (`Store::save_vectors`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewVector {
    pub conversation_id: String,
    pub seq: i64,
    pub vector: Vec<f32>,
}

/// One tenant's conversation: what a use case on a conversation is given, so that the two
/// never travel apart (or swapped) as loose strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationRef<'a> {
    pub tenant: &'a str,
    pub id: &'a str,
}

impl<'a> ConversationRef<'a> {
    /// Conversation `id` of `tenant`.
    pub fn new(tenant: &'a str, id: &'a str) -> Self {
        ConversationRef { tenant, id }
    }
}

/// What recall chooses its section from (see [`crate::Store::recall_choose`]): the hits of a
/// conversation's history under a query, counted under `tokenizer`, escaped or not.
#[derive(Debug, Clone, Copy)]
pub struct RecallChoice<'a> {
    pub conv: ConversationRef<'a>,
    pub query: &'a recall_core::recall::RecallQuery,
    pub hits: &'a [recall_core::recall::Ranked],
    pub tokenizer: recall_core::tokens::Tokenizer,
    pub escape: bool,
    /// Whether the ranking reached every message it could (false: the section says so).
    pub complete: bool,
}
