//! PostgreSQL's full-text search: the `messages_fts` expression index follows every write.
//!
//! The index is a GIN index over `to_tsvector('simple', recall_message_text(content))`
//! (migration 0002), kept by the database itself, so no write path here updates it.

use async_trait::async_trait;

use super::PgStore;
use crate::error::StoreError;
use crate::model::SearchHit;
use crate::ops::SearchOps;

#[async_trait]
impl SearchOps for PgStore {
    /// Full-text search with the `simple` configuration; `ts_rank` order.
    async fn search_hits(
        &self,
        tenant: &str,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<SearchHit>, StoreError> {
        // The tsvector expression is the index's, character for character, so the index is
        // used.
        let rows: Vec<(String, i64, String, String)> = sqlx::query_as(
            "SELECT m.conversation_id, m.seq, m.role, \
             ts_headline('simple'::regconfig, recall_message_text(m.content), q, \
             'StartSel=\"**\", StopSel=\"**\", MaxWords=24, MinWords=8, MaxFragments=1, \
             FragmentDelimiter=\" … \"') \
             FROM messages m JOIN conversations c ON c.id = m.conversation_id, \
             plainto_tsquery('simple'::regconfig, $1) AS q \
             WHERE c.tenant = $2 \
             AND to_tsvector('simple'::regconfig, recall_message_text(m.content)) @@ q \
             ORDER BY ts_rank(to_tsvector('simple'::regconfig, recall_message_text(m.content)), q) DESC, \
             m.conversation_id, m.seq LIMIT $3",
        )
        .bind(words.join(" "))
        .bind(tenant)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(conversation_id, seq, role, snippet)| SearchHit {
                conversation_id,
                seq,
                role,
                snippet,
            })
            .collect())
    }
}
