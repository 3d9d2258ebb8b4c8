//! Recall on PostgreSQL. In `conversation` scope: the lexical index of migration 0007
//! (`recall_plan`), as far as it is caught up (`Store::catch_up_recall`), read along the history's chain (a fork
//! reaches its parent's prefix) in two statements, ranked by recall-core. In `tenant` scope:
//! `ts_rank_cd` over the tenant's messages (OR over the query terms, through the
//! `messages_fts` expression index, which follows every write). The hits' neighbours are read
//! by seq.

use std::collections::HashMap;

use async_trait::async_trait;
use recall_core::recall::{
    rank_postings, ranked_terms, Posting, Ranked, RecallQuery, TermList, POSTINGS_PER_TERM,
};
use sqlx::Row;

use super::{stored_at, PgStore};
use crate::driver::Conv;
use crate::error::StoreError;
use crate::model::RecallHits;
use crate::model::StoredMessage;
use crate::ops::RecallOps;
use crate::recall_plan::{
    batch_terms, earlier_texts, index_rows, merge_postings, recall_ranges, IndexSource,
    RecallRange, DOCS_AT, EARLIER_SOURCE, INDEX_BATCH, INDEX_SOURCE, LAST_SEQ, PARENT_OF,
    RECALL_PROGRESS, SET_RECALL_PROGRESS,
};
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

/// The running figures below the end of each range (`$1` ids, `$2` ends), summed over the
/// ranges: a row `(0, N)` for the messages and `(j, df)` for term `j` of `$3` (1-based).
const FIGURES: &str = "SELECT 0::bigint, COALESCE(SUM((SELECT n FROM recall_docs d \
     WHERE d.conversation_id = r.id AND d.seq <= r.hi ORDER BY d.seq DESC LIMIT 1)), 0)::bigint \
     FROM unnest($1::text[], $2::bigint[]) AS r(id, hi) \
     UNION ALL SELECT t.j, COALESCE(SUM((SELECT p.df FROM recall_postings p \
     WHERE p.conversation_id = r.id AND p.term = t.term AND p.seq <= r.hi \
     ORDER BY p.seq DESC LIMIT 1)), 0)::bigint \
     FROM unnest($3::text[]) WITH ORDINALITY AS t(term, j) \
     CROSS JOIN unnest($1::text[], $2::bigint[]) AS r(id, hi) GROUP BY t.j";

/// Each term's (`$3`, 1-based `j`) best postings in each range (`$1` ids, `$2` ends), at most
/// `$4` per range: j, seq, weight.
const BEST_POSTINGS: &str = "SELECT t.j, b.seq, b.weight \
     FROM unnest($3::text[]) WITH ORDINALITY AS t(term, j) \
     CROSS JOIN unnest($1::text[], $2::bigint[]) AS r(id, hi) \
     CROSS JOIN LATERAL (SELECT p.seq, p.weight FROM recall_postings p \
     WHERE p.conversation_id = r.id AND p.term = t.term AND p.seq <= r.hi \
     ORDER BY p.weight DESC, p.seq DESC LIMIT $4) AS b";

/// The `df` of each term of `$2` in conversation `$1` at its newest posting (0 for none).
const DFS: &str = "SELECT t.term, COALESCE((SELECT p.df FROM recall_postings p \
     WHERE p.conversation_id = $1 AND p.term = t.term ORDER BY p.seq DESC LIMIT 1), 0)::bigint \
     FROM unnest($2::text[]) AS t(term)";

/// The ranges' ids and ends, as two arrays for `unnest`.
fn range_arrays(ranges: &[RecallRange]) -> (Vec<String>, Vec<i64>) {
    ranges.iter().map(|r| (r.id.clone(), r.hi)).unzip()
}

impl PgStore {
    /// Indexes the next messages of conversation `id` up to `hi` (at most `INDEX_BATCH`) in
    /// one transaction under the conversation's index lock (migration 0007); how far it is
    /// indexed then.
    async fn index_batch(&self, id: &str, hi: i64) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('recall_index:' || $1, 0))")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let done: i64 = sqlx::query_scalar(RECALL_PROGRESS)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .unwrap_or(0);
        if done >= hi {
            return Ok(done);
        }
        let messages: Vec<(i64, String, String, i64)> = sqlx::query_as(INDEX_SOURCE)
            .bind(id)
            .bind(done)
            .bind(hi)
            .bind(INDEX_BATCH)
            .fetch_all(&mut *tx)
            .await?;
        let last_n: i64 = sqlx::query_scalar(DOCS_AT)
            .bind(id)
            .bind(done)
            .fetch_optional(&mut *tx)
            .await?
            .unwrap_or(0);
        // The history before the batch's first message (a fork's first rows follow its
        // parent's).
        let first = messages.first().map_or(done + 1, |m| m.0);
        let earlier = earlier_texts(&Self::earlier(&mut tx, id, first - 1).await?)?;
        let terms = batch_terms(&messages, &earlier)?;
        let dfs: HashMap<String, i64> = sqlx::query_as::<_, (String, i64)>(DFS)
            .bind(id)
            .bind(&terms)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect();
        let rows = index_rows(&messages, &earlier, last_n, false, |t| {
            Ok(dfs.get(t).copied().unwrap_or(0))
        })?;
        let (seqs, ns, lists): (Vec<i64>, Vec<i64>, Vec<String>) = rows
            .docs
            .iter()
            .map(|(seq, n, terms, _)| (*seq, *n, terms.join(" ")))
            .fold((vec![], vec![], vec![]), |mut acc, (a, b, c)| {
                acc.0.push(a);
                acc.1.push(b);
                acc.2.push(c);
                acc
            });
        sqlx::query(
            "INSERT INTO recall_docs (conversation_id, seq, n, terms) \
             SELECT $1, d.seq, d.n, CASE WHEN d.terms = '' THEN '{}'::text[] \
             ELSE string_to_array(d.terms, ' ') END \
             FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS d(seq, n, terms)",
        )
        .bind(id)
        .bind(&seqs)
        .bind(&ns)
        .bind(&lists)
        .execute(&mut *tx)
        .await?;
        let mut terms = Vec::with_capacity(rows.postings.len());
        let mut pseqs = Vec::with_capacity(rows.postings.len());
        let mut weights = Vec::with_capacity(rows.postings.len());
        let mut dfs = Vec::with_capacity(rows.postings.len());
        for (t, seq, w, df) in rows.postings {
            terms.push(t);
            pseqs.push(seq);
            weights.push(w);
            dfs.push(df);
        }
        sqlx::query(
            "INSERT INTO recall_postings (conversation_id, term, seq, weight, df) \
             SELECT $1, p.term, p.seq, p.weight, p.df \
             FROM unnest($2::text[], $3::bigint[], $4::float8[], $5::bigint[]) AS p(term, seq, weight, df)",
        )
        .bind(id)
        .bind(&terms)
        .bind(&pseqs)
        .bind(&weights)
        .bind(&dfs)
        .execute(&mut *tx)
        .await?;
        let reached = match messages.last() {
            Some((seq, _, _, _)) if (messages.len() as i64) == INDEX_BATCH => *seq,
            _ => hi,
        };
        sqlx::query(SET_RECALL_PROGRESS)
            .bind(id)
            .bind(reached)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(reached)
    }

    /// The non-system messages of conversation `id`'s history at or below seq `upto`, newest
    /// first, as many as a document takes (`recall_plan::EARLIER_SOURCE`): its own rows,
    /// then its parent's at or below its fork point, and so on.
    async fn earlier(
        conn: &mut sqlx::PgConnection,
        id: &str,
        upto: i64,
    ) -> Result<Vec<IndexSource>, StoreError> {
        let need = recall_core::recall::NEIGHBOUR_WEIGHTS.len();
        let (mut conv, mut upto) = (id.to_string(), upto);
        let mut out: Vec<IndexSource> = Vec::with_capacity(need);
        loop {
            let rows: Vec<IndexSource> = sqlx::query_as(EARLIER_SOURCE)
                .bind(&conv)
                .bind(upto)
                .bind((need - out.len()) as i64)
                .fetch_all(&mut *conn)
                .await?;
            out.extend(rows);
            if out.len() >= need {
                return Ok(out);
            }
            let parent: Option<(Option<String>, Option<i64>)> = sqlx::query_as(PARENT_OF)
                .bind(&conv)
                .fetch_optional(&mut *conn)
                .await?;
            match parent {
                Some((Some(p), Some(k))) => {
                    conv = p;
                    upto = upto.min(k);
                }
                _ => return Ok(out),
            }
        }
    }

    /// The parts of conversation `id`'s history that `query` may reach (`conversation`
    /// scope), and whether its lexical index covers all of them. Nothing is indexed here:
    /// [`crate::Store::catch_up_recall`] does that.
    async fn recall_index(
        &self,
        tenant: &str,
        id: &str,
        before: i64,
    ) -> Result<(Vec<RecallRange>, Vec<(String, i64)>), StoreError> {
        let mut conn = self.pool.acquire().await?;
        let ranges = recall_ranges(&Self::chain(&mut conn, tenant, id).await?, before);
        let (ids, _) = range_arrays(&ranges);
        let done: HashMap<String, i64> = sqlx::query_as::<_, (String, i64)>(
            "SELECT conversation_id, recall_seq FROM recall_progress \
             WHERE conversation_id = ANY($1::text[])",
        )
        .bind(&ids)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
        let last: i64 = sqlx::query_scalar(LAST_SEQ)
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
        // The conversation's own range reaches its newest message at most.
        let behind = ranges
            .iter()
            .map(|r| (r, if r.id == id { r.hi.min(last) } else { r.hi }))
            .filter(|(r, top)| done.get(&r.id).copied().unwrap_or(0) < *top)
            .map(|(r, top)| (r.id.clone(), top))
            .collect();
        Ok((ranges, behind))
    }

    /// The lexical hits over `ranges` (see `recall_plan`): two statements, the figures and
    /// then the ranked terms' best postings.
    async fn rank(
        &self,
        ranges: &[RecallRange],
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<Ranked>, StoreError> {
        let terms = &recall_core::recall::stems(terms);
        let (ids, his) = range_arrays(ranges);
        let figures: Vec<(i64, i64)> = sqlx::query_as(FIGURES)
            .bind(&ids)
            .bind(&his)
            .bind(terms)
            .fetch_all(&self.pool)
            .await?;
        let mut n = 0u64;
        let mut dfs = vec![0u64; terms.len()];
        for (j, v) in figures {
            let v = v.max(0) as u64;
            match usize::try_from(j) {
                Ok(0) => n = v,
                Ok(j) if j <= terms.len() => dfs[j - 1] = v,
                _ => {}
            }
        }
        let ranked = ranked_terms(&dfs);
        if ranked.is_empty() {
            return Ok(Vec::new());
        }
        let chosen: Vec<String> = ranked.iter().map(|&i| terms[i].clone()).collect();
        let rows: Vec<(i64, i64, f64)> = sqlx::query_as(BEST_POSTINGS)
            .bind(&ids)
            .bind(&his)
            .bind(&chosen)
            .bind(POSTINGS_PER_TERM as i64)
            .fetch_all(&self.pool)
            .await?;
        let mut per_term: Vec<Vec<Posting>> = vec![Vec::new(); chosen.len()];
        for (j, seq, weight) in rows {
            if let Some(list) = usize::try_from(j)
                .ok()
                .and_then(|j| per_term.get_mut(j - 1))
            {
                list.push(Posting { seq, weight });
            }
        }
        let lists: Vec<TermList> = ranked
            .iter()
            .zip(per_term)
            .map(|(&i, postings)| TermList {
                df: dfs[i],
                postings: merge_postings(vec![postings]),
            })
            .collect();
        Ok(rank_postings(n, &lists, limit))
    }
}

#[async_trait]
impl RecallOps for PgStore {
    /// Every range, the conversation's own up to its newest message.
    async fn recall_behind(&self, c: Conv<'_>) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(self.recall_index(c.tenant, c.id, i64::MAX).await?.1)
    }

    async fn recall_index_batch(&self, seg: String, hi: i64) -> Result<i64, StoreError> {
        self.index_batch(&seg, hi).await
    }

    /// Over the recall index as far as it is caught up.
    async fn conversation_hits(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
    ) -> Result<RecallHits, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        let (ranges, behind) = self.recall_index(tenant, id, query.before).await?;
        let hits = self.rank(&ranges, &query.terms, query.limit).await?;
        Ok(RecallHits {
            hits,
            complete: behind.is_empty(),
        })
    }

    /// `ts_rank_cd` hits over the tenant's messages (`tenant` scope).
    async fn tenant_hits(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
    ) -> Result<Vec<Ranked>, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        // The tsvector expression is the index's, character for character, so the index is
        // used.
        let sql = "SELECT CASE WHEN m.conversation_id = $2 THEN NULL ELSE m.conversation_id END, \
             m.seq, \
             ts_rank_cd(to_tsvector('simple'::regconfig, recall_message_text(m.content)), q)::float8 AS score \
             FROM messages m JOIN conversations c ON c.id = m.conversation_id, \
             to_tsquery('simple'::regconfig, $1) AS q \
             WHERE c.tenant = $3 AND (m.conversation_id <> $2 OR m.seq < $4) \
             AND m.role <> 'system' \
             AND to_tsvector('simple'::regconfig, recall_message_text(m.content)) @@ q \
             ORDER BY score DESC, m.conversation_id, m.seq LIMIT $5";
        let mut conn = self.pool.acquire().await?;
        let segs = Self::chain(&mut conn, tenant, id).await?;
        let rows: Vec<(Option<String>, i64, f64)> = sqlx::query_as(sql)
            .bind(or_tsquery(&query.terms))
            .bind(id)
            .bind(tenant)
            .bind(query.before)
            .bind(i64::try_from(query.limit).unwrap_or(i64::MAX))
            .fetch_all(&mut *conn)
            .await?;
        let hits = rows
            .into_iter()
            .map(|(c, seq, score)| Ranked::new(c, seq, score))
            .collect();
        Ok(crate::search::tenant_hits_in_history(&segs, query, hits))
    }

    async fn read_pairs(
        &self,
        tenant: &str,
        pairs: &[(String, i64)],
    ) -> Result<Vec<(String, StoredMessage)>, StoreError> {
        let (convs, seqs): (Vec<&str>, Vec<i64>) =
            pairs.iter().map(|(c, s)| (c.as_str(), *s)).unzip();
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
            .map(|r| Ok((r.try_get::<String, _>(11)?, stored_at(r, 0)?)))
            .collect()
    }
}
