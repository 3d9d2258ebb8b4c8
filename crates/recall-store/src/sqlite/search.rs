//! SQLite's full-text search: FTS5 over `message_text`, which appends do not write; each
//! search first indexes the tenant's messages appended since (migration 0004).

use async_trait::async_trait;
use rusqlite::Connection;

use super::conn::{named, Connections};
use super::SqliteStore;
use crate::error::StoreError;
use crate::model::SearchHit;
use crate::ops::SearchOps;

/// The searchable text of a stored content column (`m.content`), as migration 0002 defines it:
/// string content, or its text blocks joined with a newline.
const MESSAGE_TEXT: &str = "CASE \
     WHEN NOT json_valid(m.content) THEN '' \
     WHEN json_type(m.content) = 'text' THEN json_extract(m.content, '$') \
     WHEN json_type(m.content) = 'array' THEN coalesce((\
         SELECT group_concat(json_extract(b.value, '$.text'), char(10)) \
         FROM json_each(m.content) AS b WHERE json_extract(b.value, '$.type') = 'text'), '') \
     ELSE '' END";

/// Whether tenant `$1` has messages the index does not hold yet.
const PENDING: &str =
    "SELECT 1 FROM conversations WHERE tenant = $1 AND indexed_seq < last_seq LIMIT 1";

/// Whether the search index of `tenant` is behind (a read: most searches find nothing to do).
pub(super) fn pending(conns: &Connections, tenant: &str) -> Result<bool, StoreError> {
    let reader = conns.reader()?;
    let mut stmt = reader.conn()?.prepare_cached(PENDING)?;
    Ok(stmt.exists(named(&[&tenant]).as_slice())?)
}

/// Brings the search index up to date for one tenant, in the writer's transaction: indexes
/// the messages above each of its conversations' `indexed_seq` in one statement, so FTS5
/// writes one segment for the whole backlog; under the write lock, no append lands between
/// the index and the mark.
pub(super) fn catch_up(tx: &Connection, tenant: &str) -> Result<(), StoreError> {
    tx.execute(
        &format!(
            "INSERT INTO message_text (conversation_id, seq, body) \
             SELECT m.conversation_id, m.seq, {MESSAGE_TEXT} \
             FROM conversations c JOIN messages m \
             ON m.conversation_id = c.id AND m.seq > c.indexed_seq AND m.seq <= c.last_seq \
             WHERE c.tenant = $1 AND c.indexed_seq < c.last_seq \
             ORDER BY m.conversation_id, m.seq"
        ),
        named(&[&tenant]).as_slice(),
    )?;
    tx.execute(
        "UPDATE conversations SET indexed_seq = last_seq \
         WHERE tenant = $1 AND indexed_seq < last_seq",
        named(&[&tenant]).as_slice(),
    )?;
    Ok(())
}

/// FTS5: every word as a quoted string (never FTS5 syntax), implicitly AND-ed; bm25 rank.
pub(super) fn hits(
    conns: &Connections,
    tenant: &str,
    words: &[String],
    limit: u32,
) -> Result<Vec<SearchHit>, StoreError> {
    let expr = words
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ");
    let reader = conns.reader()?;
    let mut stmt = reader.conn()?.prepare_cached(
        "SELECT t.conversation_id, t.seq, m.role, \
         snippet(message_fts, 0, '**', '**', '…', 24) \
         FROM message_fts \
         JOIN message_text t ON t.id = message_fts.rowid \
         JOIN conversations c ON c.id = t.conversation_id \
         JOIN messages m ON m.conversation_id = t.conversation_id AND m.seq = t.seq \
         WHERE message_fts MATCH $1 AND c.tenant = $2 \
         ORDER BY rank, t.conversation_id, t.seq LIMIT $3",
    )?;
    let limit = i64::from(limit);
    let rows = stmt
        .query_map(named(&[&expr, &tenant, &limit]).as_slice(), |r| {
            Ok(SearchHit {
                conversation_id: r.get(0)?,
                seq: r.get(1)?,
                role: r.get(2)?,
                snippet: r.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

#[async_trait]
impl SearchOps for SqliteStore {
    /// The index caught up on the writer first when it is behind.
    async fn search_hits(
        &self,
        tenant: &str,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<SearchHit>, StoreError> {
        if pending(&self.conns, tenant)? {
            let tenant = tenant.to_string();
            self.writer.write(move |tx| catch_up(tx, &tenant)).await?;
        }
        hits(&self.conns, tenant, words, limit)
    }
}
