//! Recall on SQLite: FTS5 `bm25()` over the messages older than the window (OR over the query
//! terms), and the hits' neighbours read by seq. The search index is caught up first when it
//! is behind below the window (appends do not index, migration 0004).

use recall_core::policy::RecallScope;
use recall_core::recall::{Ranked, RecallCandidate, RecallKey, RecallQuery};

use super::conn::{named, stored_message};
use super::{search, SqliteStore};
use crate::error::StoreError;
use crate::model::RecallHits;
use crate::statements::message_columns_of;

/// Whether conversation `$1` of tenant `$2` has messages below seq `$3` that the index does
/// not hold yet.
const PENDING_BELOW: &str = "SELECT 1 FROM conversations WHERE id = $1 AND tenant = $2 \
     AND indexed_seq < min(last_seq, $3 - 1)";

/// The FTS5 expression for OR over `terms`: each a quoted string, never FTS5 syntax.
pub(super) fn or_expression(terms: &[String]) -> String {
    terms
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

impl SqliteStore {
    /// Brings the search index up to date for what `query` may reach.
    async fn recall_catch_up(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
    ) -> Result<(), StoreError> {
        let pending = match query.scope {
            RecallScope::Conversation => self.read(|c| {
                let mut stmt = c.prepare_cached(PENDING_BELOW)?;
                Ok(stmt.exists(named(&[&id, &tenant, &query.before]).as_slice())?)
            })?,
            RecallScope::Tenant => search::pending(&self.conns, tenant)?,
        };
        if pending {
            let tenant = tenant.to_string();
            self.writer
                .write(move |tx| search::catch_up(tx, &tenant))
                .await?;
        }
        Ok(())
    }

    /// FTS5 bm25 hits for `query` (see [`crate::Store::recall_lexical`]).
    pub(super) async fn recall_hits(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
    ) -> Result<RecallHits, StoreError> {
        if query.terms.is_empty() || query.limit == 0 {
            return Ok(RecallHits {
                hits: Vec::new(),
                complete: true,
            });
        }
        self.recall_catch_up(tenant, id, query).await?;
        let expr = or_expression(&query.terms);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let hits = self.read(|c| {
            let sql = match query.scope {
                // `rank` is bm25(): lower is better; the score reported is its negation.
                RecallScope::Conversation => {
                    "SELECT NULL, t.seq, -bm25(message_fts) FROM message_fts \
                     JOIN message_text t ON t.id = message_fts.rowid \
                     JOIN conversations c ON c.id = t.conversation_id \
                     JOIN messages m ON m.conversation_id = t.conversation_id AND m.seq = t.seq \
                     WHERE message_fts MATCH $1 AND t.conversation_id = $2 AND c.tenant = $3 \
                     AND t.seq < $4 AND m.role <> 'system' \
                     ORDER BY rank, t.seq LIMIT $5"
                }
                RecallScope::Tenant => {
                    "SELECT CASE WHEN t.conversation_id = $2 THEN NULL ELSE t.conversation_id END, \
                     t.seq, -bm25(message_fts) FROM message_fts \
                     JOIN message_text t ON t.id = message_fts.rowid \
                     JOIN conversations c ON c.id = t.conversation_id \
                     JOIN messages m ON m.conversation_id = t.conversation_id AND m.seq = t.seq \
                     WHERE message_fts MATCH $1 AND c.tenant = $3 \
                     AND (t.conversation_id <> $2 OR t.seq < $4) AND m.role <> 'system' \
                     ORDER BY rank, t.conversation_id, t.seq LIMIT $5"
                }
            };
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt
                .query_map(
                    named(&[&expr, &id, &tenant, &query.before, &limit]).as_slice(),
                    |r| Ok(Ranked::new(r.get(0)?, r.get(1)?, r.get(2)?)),
                )?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        Ok(RecallHits {
            hits,
            complete: true,
        })
    }

    /// The messages under `keys` (see [`crate::Store::recall_messages`]).
    pub(super) fn recall_read(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        keys: &[RecallKey],
    ) -> Result<Vec<RecallCandidate>, StoreError> {
        let pairs = crate::search::recall_pairs(id, query, keys);
        if pairs.is_empty() {
            return Ok(Vec::new());
        }
        let list = serde_json::Value::Array(
            pairs
                .iter()
                .map(|(c, seq)| serde_json::json!([c, seq]))
                .collect(),
        )
        .to_string();
        let sql = format!(
            "SELECT {}, m.conversation_id FROM json_each($1) AS k \
             JOIN messages m ON m.conversation_id = json_extract(k.value, '$[0]') \
             AND m.seq = json_extract(k.value, '$[1]') \
             JOIN conversations c ON c.id = m.conversation_id AND c.tenant = $2 \
             WHERE m.role <> 'system' ORDER BY m.conversation_id, m.seq",
            message_columns_of("m")
        );
        self.read(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let mut rows = stmt.query(named(&[&list, &tenant]).as_slice())?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let conv: String = row.get(11)?;
                let m = stored_message(row)?;
                out.push(RecallCandidate {
                    conversation_id: (conv != id).then_some(conv),
                    seq: m.seq,
                    message: m.message,
                    at: Some(m.created_at),
                });
            }
            Ok(out)
        })
    }
}
