//! The tools' argument and result types. Input and output schemas are generated from these
//! types (schemars, JSON Schema 2020-12); doc comments become the schema descriptions. The
//! task types are also the bodies of the HTTP task routes: with the `utoipa` feature they
//! describe themselves to its OpenAPI document too.

use recall_core::policy::{ConversationPolicy, Format, PolicyOverrides};
// The views every interface shares (recall-engine), named here for the tools that return them.
pub use recall_engine::views::{CompactView, ConversationView, SearchHitView};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A task priority: `P0` (most urgent) to `P4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub enum Priority {
    P0,
    P1,
    #[default]
    P2,
    P3,
    P4,
}

impl From<Priority> for recall_core::task::Priority {
    fn from(p: Priority) -> Self {
        match p {
            Priority::P0 => Self::P0,
            Priority::P1 => Self::P1,
            Priority::P2 => Self::P2,
            Priority::P3 => Self::P3,
            Priority::P4 => Self::P4,
        }
    }
}

impl From<recall_core::task::Priority> for Priority {
    fn from(p: recall_core::task::Priority) -> Self {
        use recall_core::task::Priority as P;
        match p {
            P::P0 => Self::P0,
            P::P1 => Self::P1,
            P::P2 => Self::P2,
            P::P3 => Self::P3,
            P::P4 => Self::P4,
        }
    }
}

/// Who said a history message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum HistoryRole {
    User,
    Assistant,
    System,
}

/// One message of the conversation that led to a task (schema only: entries are validated
/// one by one, and invalid ones are skipped with a warning instead of failing the call).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct HistoryEntry {
    pub role: HistoryRole,
    /// The message text. User messages are cut at 150 characters, assistant messages at 8192.
    pub content: String,
}

/// Arguments of `create_task`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateTaskArgs {
    /// What the sub-agent must do.
    pub description: String,
    /// P0 (most urgent) to P4. Default P2.
    #[serde(default)]
    pub priority: Priority,
    /// Background the sub-agent needs.
    pub background_context: Option<String>,
    /// What the sub-agent must hand back.
    pub expected_deliverables: Option<Vec<String>>,
    /// How to tell the task is done.
    pub success_criteria: Option<Vec<String>>,
    /// What the sub-agent must not do.
    pub constraints: Option<Vec<String>>,
    /// Files the sub-agent should look at.
    pub relevant_files: Option<Vec<String>>,
    /// The conversation that led to this task, oldest first. Invalid entries are skipped
    /// with a warning in `validation_warnings`.
    #[schemars(with = "Option<Vec<HistoryEntry>>")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Vec<HistoryEntry>>))]
    pub conversation_history: Option<Value>,
}

/// One stored history message of a task.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct TaskMessageView {
    pub role: HistoryRole,
    pub content: String,
    /// True when the content was cut (it then ends with a `... [truncated…]` marker).
    pub truncated: bool,
}

/// Result of `create_task`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct TaskCreated {
    pub task_id: String,
    pub priority: Priority,
    /// True when the task has context beyond its description.
    pub has_enhanced_context: bool,
    /// Valid history messages stored with the task.
    pub conversation_messages_count: usize,
    /// Invalid or empty values that were skipped, one line each.
    pub validation_warnings: Vec<String>,
    /// The sub-agent's brief, with the conversation history section.
    pub prompt: String,
}

/// Arguments of `get_task`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskArgs {
    /// The id `create_task` returned.
    pub task_id: String,
}

/// Result of `get_task`: the stored task and its brief.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct TaskView {
    pub task_id: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub description: String,
    pub priority: Priority,
    pub background_context: Option<String>,
    pub expected_deliverables: Vec<String>,
    pub success_criteria: Vec<String>,
    pub constraints: Vec<String>,
    pub relevant_files: Vec<String>,
    pub conversation_history: Vec<TaskMessageView>,
    pub has_enhanced_context: bool,
    pub conversation_messages_count: usize,
    pub validation_warnings: Vec<String>,
    /// The sub-agent's brief.
    pub prompt: String,
}

/// Arguments of `get_context`: the same limits as `recall context`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
// No `deny_unknown_fields` here: the flattened `PolicyOverrides` is given every field this
// struct does not claim, and refuses the ones that are not policy fields.
#[schemars(deny_unknown_fields)]
pub struct GetContextArgs {
    pub conversation_id: String,
    /// Output format. Default: the conversation's own, else `transcript`.
    pub format: Option<Format>,
    /// The current message: for `xml` the message after the history; for other formats a
    /// user message appended (not stored).
    pub current: Option<String>,
    /// Escape turn labels inside message content (default true).
    pub escape: Option<bool>,
    /// What recall looks for (with `recall_tokens`); default: the newest user message's
    /// text. Not stored.
    pub query: Option<String>,
    #[serde(flatten)]
    pub policy: PolicyOverrides,
}

/// Arguments of `compact_conversation`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
// No `deny_unknown_fields` here: the flattened `PolicyOverrides` refuses what is not a policy
// field.
#[schemars(deny_unknown_fields)]
pub struct CompactConversationArgs {
    pub conversation_id: String,
    /// The summariser's model (default: the backend's).
    pub model: Option<String>,
    /// The format whose window the summary ends before (default: the conversation's, else
    /// `transcript`).
    pub format: Option<Format>,
    #[serde(flatten)]
    pub policy: PolicyOverrides,
}

/// Result of `get_context`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContextView {
    pub conversation_id: String,
    pub format: Format,
    /// The rendered prompt: a string for text formats, a request body object for
    /// `anthropic` and `openai`.
    pub prompt: Value,
    pub stats: recall_core::select::Stats,
    /// The summary and recalled sections, as placed in `prompt`, as data.
    pub sections: recall_core::context::Sections,
}

/// A message role for `append_message`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AppendRole {
    User,
    Assistant,
    System,
}

/// Arguments of `append_message`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendMessageArgs {
    pub conversation_id: String,
    pub role: AppendRole,
    /// A string, or a list of Anthropic content blocks (`{"type": "text", "text": …}`, …).
    #[schemars(with = "ContentSchema")]
    pub content: Value,
    /// Client idempotency key: appending the same message again with the same id stores
    /// nothing and returns the first seq; a different message with a used id is an error.
    pub id: Option<String>,
    /// Free-form metadata stored with the message.
    pub metadata: Option<Map<String, Value>>,
    /// When the message was written, RFC 3339 (`2023-05-08T13:56:00Z`, any offset), kept as
    /// given; absent: now. It may not be earlier than the conversation's newest message, nor
    /// more than 5 minutes ahead of the server's clock.
    pub created_at: Option<String>,
}

/// Message content: text, or content blocks.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // Schema only.
enum ContentSchema {
    Text(String),
    Blocks(Vec<Map<String, Value>>),
}

/// Result of `append_message`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Appended {
    pub conversation_id: String,
    pub seq: i64,
    /// True when the id was seen before: nothing was written.
    pub duplicate: bool,
}

/// Arguments of `list_conversations`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListConversationsArgs {
    /// At most this many (1–1000, default 50).
    pub limit: Option<u32>,
    /// Start after this conversation id (`next_after` of the previous page).
    pub after: Option<String>,
}

/// Result of `list_conversations`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConversationList {
    pub conversations: Vec<ConversationView>,
    /// Pass as `after` for the next page; null when this page is not full (nothing follows).
    /// A full page always has a cursor, and the page after it may be empty.
    pub next_after: Option<String>,
}

/// Arguments of `create_conversation`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConversationArgs {
    pub title: Option<String>,
    /// System prompt sent with every context.
    pub system_prompt: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    /// Default context policy: an optional `format` and limits such as `max_tokens`.
    pub policy: Option<ConversationPolicy>,
    /// A name of your own for the conversation (unique in this tenant): the first call with
    /// a key creates it, later calls return the same conversation and ignore the other
    /// fields.
    pub key: Option<String>,
}

/// Arguments of `clear_conversation`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClearConversationArgs {
    pub conversation_id: String,
}

/// Result of `clear_conversation`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Cleared {
    pub conversation_id: String,
    /// Messages removed (the conversation is kept).
    pub removed: u64,
}

/// Arguments of `search_history`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchHistoryArgs {
    /// Words to find; a message matches when it holds every word (case-insensitive).
    pub query: String,
    /// At most this many hits (1–100, default 20).
    pub limit: Option<u32>,
}

/// Result of `search_history`, best matches first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchResults {
    pub hits: Vec<SearchHitView>,
}

/// Arguments of `fork_conversation`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkConversationArgs {
    pub conversation_id: String,
    /// The last message the fork keeps (0 keeps none): its history is the conversation's
    /// messages up to this seq, then its own.
    pub at: i64,
    /// The fork's title (default: the conversation's).
    pub title: Option<String>,
}

/// Arguments of `retry_turn`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
// No `deny_unknown_fields` here: the flattened `PolicyOverrides` refuses what is not a policy
// field.
#[schemars(deny_unknown_fields)]
pub struct RetryTurnArgs {
    pub conversation_id: String,
    /// The seq of the assistant reply to regenerate (or of an unanswered user message that
    /// ends the conversation).
    pub seq: i64,
    /// The model (default: the backend's).
    pub model: Option<String>,
    /// The most tokens the new reply may have (default 4096).
    pub max_output_tokens: Option<u32>,
    /// The context's limits, as in `get_context` (`max_tokens` is the history budget).
    #[serde(flatten)]
    pub policy: PolicyOverrides,
}

/// Result of `retry_turn`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RetryResult {
    /// The fork the new reply is on (the old reply stays on the original).
    pub conversation_id: String,
    /// The new reply's seq, when anything of it arrived.
    pub reply_seq: Option<i64>,
    /// `complete`, or `partial` when the backend failed mid-reply.
    pub status: String,
    /// The new reply's text.
    pub text: String,
    pub stop_reason: Option<String>,
    /// Why the reply is partial or missing.
    pub error: Option<String>,
}
