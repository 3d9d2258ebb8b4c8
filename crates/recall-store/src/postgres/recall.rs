//! Recall on PostgreSQL: `ts_rank_cd` over the messages older than the window (OR over the
//! query terms, through the `messages_fts` expression index, which follows every write), and
//! the hits' neighbours read by seq.

use recall_core::policy::RecallScope;
use recall_core::recall::{Ranked, RecallCandidate, RecallKey, RecallQuery};
use sqlx::Row;

use super::{stored_at, PgStore};
use crate::error::StoreError;
use crate::model::RecallHits;
use crate::statements::message_columns_of;

/// The tsquery text for OR over `terms`: each a quoted lexeme (terms are letters and digits
/// only, see `recall_core::recall::words`, so no quote can occur inside).
fn or_tsquery(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("'{}'", t.replace('\'', "")))
        .collect::<Vec<_>>()
        .join(" | ")
}

impl PgStore {
    /// `ts_rank_cd` hits for `query` (see [`crate::Store::recall_lexical`]).
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
        // The tsvector expression is the index's, character for character, so the index is
        // used.
        let sql = match query.scope {
            RecallScope::Conversation => {
                "SELECT NULL::text, m.seq, \
                 ts_rank_cd(to_tsvector('simple'::regconfig, recall_message_text(m.content)), q)::float8 AS score \
                 FROM messages m JOIN conversations c ON c.id = m.conversation_id, \
                 to_tsquery('simple'::regconfig, $1) AS q \
                 WHERE m.conversation_id = $2 AND c.tenant = $3 AND m.seq < $4 \
                 AND m.role <> 'system' \
                 AND to_tsvector('simple'::regconfig, recall_message_text(m.content)) @@ q \
                 ORDER BY score DESC, m.seq LIMIT $5"
            }
            RecallScope::Tenant => {
                "SELECT CASE WHEN m.conversation_id = $2 THEN NULL ELSE m.conversation_id END, \
                 m.seq, \
                 ts_rank_cd(to_tsvector('simple'::regconfig, recall_message_text(m.content)), q)::float8 AS score \
                 FROM messages m JOIN conversations c ON c.id = m.conversation_id, \
                 to_tsquery('simple'::regconfig, $1) AS q \
                 WHERE c.tenant = $3 AND (m.conversation_id <> $2 OR m.seq < $4) \
                 AND m.role <> 'system' \
                 AND to_tsvector('simple'::regconfig, recall_message_text(m.content)) @@ q \
                 ORDER BY score DESC, m.conversation_id, m.seq LIMIT $5"
            }
        };
        let rows: Vec<(Option<String>, i64, f64)> = sqlx::query_as(sql)
            .bind(or_tsquery(&query.terms))
            .bind(id)
            .bind(tenant)
            .bind(query.before)
            .bind(i64::try_from(query.limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?;
        Ok(RecallHits {
            hits: rows
                .into_iter()
                .map(|(c, seq, score)| Ranked::new(c, seq, score))
                .collect(),
            complete: true,
        })
    }

    /// The messages under `keys` (see [`crate::Store::recall_messages`]).
    pub(super) async fn recall_read(
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
        let (convs, seqs): (Vec<String>, Vec<i64>) = pairs.into_iter().unzip();
        let sql = format!(
            "SELECT {}, m.conversation_id FROM unnest($1::text[], $2::bigint[]) AS k(cid, seq) \
             JOIN messages m ON m.conversation_id = k.cid AND m.seq = k.seq \
             JOIN conversations c ON c.id = m.conversation_id AND c.tenant = $3 \
             WHERE m.role <> 'system' ORDER BY m.conversation_id, m.seq",
            message_columns_of("m")
        );
        let rows = sqlx::query(&sql)
            .bind(&convs)
            .bind(&seqs)
            .bind(tenant)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                let conv: String = r.try_get(11)?;
                let m = stored_at(r, 0)?;
                Ok(RecallCandidate {
                    conversation_id: (conv != id).then_some(conv),
                    seq: m.seq,
                    message: m.message,
                    at: Some(m.created_at),
                })
            })
            .collect()
    }
}
