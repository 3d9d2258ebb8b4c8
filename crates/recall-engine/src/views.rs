//! What every interface returns, defined once: the CLI's `--json`, the HTTP API and MCP all
//! serialise these, so a field has one name and one spelling everywhere (times are RFC 3339
//! strings in UTC; tokens are o200k counts). The optional `schemars` and `utoipa` features
//! derive the JSON Schema MCP publishes and the OpenAPI document the server serves.
//!
//! Context stats are not here: they are [`recall_core::select::Stats`] itself, which carries
//! the same derives.
//!
//! The views: `ConversationView` (with its `ForkPointView` and, where one conversation is read,
//! its newest `SummaryView`), `MessageView`, `AlternativeView`, `SearchHitView`, `SummaryView`
//! and `CompactView`. Adding a field to one touches its struct and its `From` impl;
//! `crates/recall-cli/tests/mcp_http.rs` reads one conversation through the CLI, HTTP and MCP
//! and compares the answers field for field.

use crate::ConversationRef;
use recall_core::policy::ConversationPolicy;
use recall_core::time::format_rfc3339;
use recall_store::{Conversation, SearchHit, StoredMessage, StoredSummary};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::forks::Alternative;
use crate::summaries::{CompactReport, CompactStatus};
use crate::{Engine, EngineError};

impl Engine {
    /// One conversation as every interface shows it when asked for that conversation: with
    /// its newest summary (lists leave it out).
    pub async fn conversation_view(
        &self,
        c: ConversationRef<'_>,
    ) -> Result<ConversationView, EngineError> {
        let (tenant, id) = (c.tenant, c.id);
        let c = self.store.get_conversation(tenant, id).await?;
        let summary = self.store.summaries(tenant, id, 1).await?;
        Ok(ConversationView::from(&c).with_summary(summary.first()))
    }
}

/// A stored conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ConversationView {
    pub id: String,
    pub title: Option<String>,
    /// Sent with every context.
    pub system_prompt: Option<String>,
    #[cfg_attr(feature = "utoipa", schema(value_type = Object))]
    pub metadata: Map<String, Value>,
    /// Default context policy: an optional `format` and limits.
    pub policy: Option<ConversationPolicy>,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// RFC 3339, UTC: the last change (a message appended, a setting changed).
    pub updated_at: String,
    pub message_count: i64,
    /// The highest seq ever assigned (clearing does not reset it).
    pub last_seq: i64,
    /// Tokens (o200k) of the history.
    pub tokens: i64,
    /// Set on a fork: the conversation and seq its history is read from, up to that seq.
    pub forked_from: Option<ForkPointView>,
    /// The newest summary of what the window left behind, where the interface reads one
    /// conversation (absent when there is none, and in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<SummaryView>,
}

impl From<&Conversation> for ConversationView {
    fn from(c: &Conversation) -> Self {
        ConversationView {
            id: c.id.clone(),
            title: c.title.clone(),
            system_prompt: c.system_prompt.clone(),
            metadata: c.metadata.clone(),
            policy: c.policy.clone(),
            created_at: format_rfc3339(c.created_at),
            updated_at: format_rfc3339(c.updated_at),
            message_count: c.message_count,
            last_seq: c.last_seq,
            tokens: c.total_tokens,
            forked_from: c.forked_from.as_ref().map(|f| ForkPointView {
                conversation_id: f.conversation_id.clone(),
                seq: f.seq,
            }),
            summary: None,
        }
    }
}

impl ConversationView {
    /// The view with the conversation's newest summary (`None`: it has none).
    pub fn with_summary(mut self, summary: Option<&StoredSummary>) -> Self {
        self.summary = summary.map(SummaryView::from);
        self
    }
}

/// Where a fork was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ForkPointView {
    pub conversation_id: String,
    /// The last message of that conversation the fork's history holds.
    pub seq: i64,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct MessageView {
    pub seq: i64,
    /// `complete`, `partial` for an interrupted streamed reply, or `redacted`.
    pub status: String,
    /// RFC 3339, UTC: as given when it was appended, else when it was stored.
    pub created_at: String,
    /// Tokens (o200k).
    pub tokens: i64,
    /// The message (Anthropic shape, with its client `id` and `metadata`).
    #[cfg_attr(feature = "utoipa", schema(value_type = Object))]
    pub message: Value,
}

impl From<&StoredMessage> for MessageView {
    fn from(m: &StoredMessage) -> Self {
        MessageView {
            seq: m.seq,
            status: m.status.as_str().to_string(),
            created_at: format_rfc3339(m.created_at),
            tokens: m.figures.tokens_o200k,
            message: m.message.to_json(),
        }
    }
}

/// One alternative of a message: the message at the same seq on one path of the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct AlternativeView {
    /// The conversation to read or continue to follow this path.
    pub conversation_id: String,
    /// Whether this is the asked conversation's own path.
    pub current: bool,
    pub message: MessageView,
}

impl From<&Alternative> for AlternativeView {
    fn from(a: &Alternative) -> Self {
        AlternativeView {
            conversation_id: a.conversation_id.clone(),
            current: a.current,
            message: MessageView::from(&a.message),
        }
    }
}

/// One message found by full-text search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SearchHitView {
    pub conversation_id: String,
    pub seq: i64,
    pub role: String,
    /// The matching passage; matched words are wrapped in `**`.
    pub snippet: String,
}

impl From<SearchHit> for SearchHitView {
    fn from(h: SearchHit) -> Self {
        SearchHitView {
            conversation_id: h.conversation_id,
            seq: h.seq,
            role: h.role,
            snippet: h.snippet,
        }
    }
}

/// A stored summary version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SummaryView {
    /// 1, 2, …: the order the versions were committed in.
    pub version: i64,
    /// The messages it stands for: `from_seq` through `to_seq`.
    pub from_seq: i64,
    pub to_seq: i64,
    pub text: String,
    /// Tokens (o200k) of its section as a context carries it.
    pub tokens: u64,
    /// The backend and model that wrote it.
    pub backend: String,
    pub model: String,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl From<&StoredSummary> for SummaryView {
    fn from(s: &StoredSummary) -> Self {
        SummaryView {
            version: s.version,
            from_seq: s.from_seq,
            to_seq: s.to_seq,
            text: s.text.clone(),
            tokens: s.tokens.o200k,
            backend: s.backend.clone(),
            model: s.model.clone(),
            created_at: format_rfc3339(s.created_at),
        }
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct CompactView {
    pub conversation_id: String,
    /// `compacted` (new versions committed) or `up_to_date`.
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    #[cfg_attr(feature = "utoipa", schema(value_type = String, example = "compacted"))]
    pub status: CompactStatus,
    /// The newest summary (`null`: none yet).
    pub summary: Option<SummaryView>,
    /// Summariser calls made (one version committed per call).
    pub calls: u32,
    /// The summariser's input and output tokens, as it reported them (0 when it reports none).
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl CompactView {
    /// The view of `report`, a compaction of conversation `id`.
    pub fn new(id: &str, report: &CompactReport) -> Self {
        CompactView {
            conversation_id: id.to_string(),
            status: report.status,
            summary: report.summary.as_ref().map(SummaryView::from),
            calls: report.calls,
            input_tokens: report.input_tokens,
            output_tokens: report.output_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recall_store::{ForkPoint, SummaryTokens};

    fn conversation() -> Conversation {
        Conversation {
            id: "c1".into(),
            tenant: "t".into(),
            title: Some("T".into()),
            system_prompt: None,
            metadata: Map::new(),
            policy: None,
            created_at: 1_683_554_160_000,
            updated_at: 1_683_554_160_250,
            message_count: 2,
            last_seq: 2,
            total_tokens: 9,
            forked_from: Some(ForkPoint {
                conversation_id: "c0".into(),
                seq: 4,
            }),
        }
    }

    #[test]
    fn a_conversation_has_rfc3339_times_and_a_fork_point_object() {
        let v = serde_json::to_value(ConversationView::from(&conversation())).unwrap();
        assert_eq!(v["created_at"], "2023-05-08T13:56:00Z");
        assert_eq!(v["updated_at"], "2023-05-08T13:56:00.250Z");
        assert_eq!(
            v["forked_from"],
            serde_json::json!({"conversation_id": "c0", "seq": 4})
        );
        assert_eq!(v["tokens"], 9);
        // No summary: the field is absent, not null.
        assert!(v.get("summary").is_none(), "{v}");
    }

    #[test]
    fn a_summary_is_shown_with_its_o200k_tokens() {
        let s = StoredSummary {
            version: 2,
            from_seq: 1,
            to_seq: 40,
            text: "- a fact".into(),
            tokens: SummaryTokens {
                o200k: 12,
                ..SummaryTokens::default()
            },
            backend: "local".into(),
            model: "m".into(),
            created_at: 0,
        };
        let v = ConversationView::from(&conversation()).with_summary(Some(&s));
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["summary"]["tokens"], 12);
        assert_eq!(j["summary"]["created_at"], "1970-01-01T00:00:00Z");
        assert_eq!(j["summary"]["version"], 2);
    }
}
