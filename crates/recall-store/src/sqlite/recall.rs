//! Recall on SQLite. In `conversation` scope: the lexical index of migration 0007
//! (`recall_plan`), as far as it is caught up (`Store::catch_up_recall`), read along the history's
//! chain (a fork reaches its parent's prefix), ranked by recall-core. In `tenant` scope: FTS5 `bm25()` over
//! the tenant's messages (OR over the query terms), the search index caught up first. The
//! hits' neighbours are read by seq.

use recall_core::policy::RecallScope;
use recall_core::recall::{
    choose_from, known_frame_tokens, rank_postings, ranked_terms, CandidateSource, Posting, Ranked,
    RecallCandidate, RecallKey, RecallQuery, RecallSection, TermList, POSTINGS_PER_TERM,
};
use recall_core::tokens::Tokenizer;
use rusqlite::{Connection, OptionalExtension};

use super::conn::{named, stored_message};
use super::{forks, search, SqliteStore};
use crate::driver::Conv;
use crate::error::StoreError;
use crate::fork_plan::{owner, Segment};
use crate::model::RecallHits;
use crate::model::StoredMessage;
use crate::ops::{Choice, RecallOps};
use crate::recall_plan::{
    earlier_texts, index_rows, merge_postings, recall_ranges, IndexSource, RecallRange, DF_AT,
    DOCS_AT, EARLIER_SOURCE, INDEX_BATCH, INDEX_SOURCE, LAST_SEQ, PARENT_OF, RECALL_PROGRESS,
    SET_RECALL_PROGRESS,
};
use crate::statements::message_columns_of;
use async_trait::async_trait;

/// A term's best postings in conversation `$1` at or below seq `$3`, at most `$4`. The index
/// is named: without statistics SQLite may prefer the primary key's range on seq and sort.
const BEST_POSTINGS: &str = "SELECT seq, weight FROM recall_postings INDEXED BY \
     recall_postings_best WHERE conversation_id = $1 AND term = $2 AND seq <= $3 \
     ORDER BY weight DESC, seq DESC LIMIT $4";

const INSERT_DOC: &str = "INSERT INTO recall_docs (conversation_id, seq, n, terms, \
     tokens_o200k, tokens_cl100k) VALUES ($1, $2, $3, $4, $5, $6)";

/// The tokens of an indexed message's excerpt: conversation `$1`, seq `$2`.
const DOC_TOKENS_O200K: &str =
    "SELECT tokens_o200k FROM recall_docs WHERE conversation_id = $1 AND seq = $2";
const DOC_TOKENS_CL100K: &str =
    "SELECT tokens_cl100k FROM recall_docs WHERE conversation_id = $1 AND seq = $2";
const INSERT_POSTING: &str = "INSERT INTO recall_postings (conversation_id, term, seq, weight, \
     df) VALUES ($1, $2, $3, $4, $5)";

/// The FTS5 expression for OR over `terms`: each a quoted string, never FTS5 syntax.
pub(super) fn or_expression(terms: &[String]) -> String {
    terms
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

fn progress(conn: &Connection, id: &str) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(RECALL_PROGRESS)?
        .query_row(named(&[&id]).as_slice(), |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// One probe: a running count at or below `at` (`DOCS_AT`, `DF_AT`), 0 for none.
fn count_at(
    conn: &Connection,
    sql: &str,
    values: &[&dyn rusqlite::ToSql],
) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(sql)?
        .query_row(named(values).as_slice(), |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Indexes the next messages of conversation `id` up to `hi` (at most `INDEX_BATCH`), in the
/// writer's transaction; how far it is indexed then.
fn index_batch(tx: &Connection, id: &str, hi: i64) -> Result<i64, StoreError> {
    let done = progress(tx, id)?;
    if done >= hi {
        return Ok(done);
    }
    let messages: Vec<(i64, String, String, i64)> = tx
        .prepare_cached(INDEX_SOURCE)?
        .query_map(named(&[&id, &done, &hi, &INDEX_BATCH]).as_slice(), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<_, _>>()?;
    let last_n = count_at(tx, DOCS_AT, &[&id, &done])?;
    // The history before the batch's first message (a fork's first rows follow its parent's).
    let first = messages.first().map_or(done + 1, |m| m.0);
    let earlier = earlier_texts(&earlier(tx, id, first - 1)?)?;
    // The excerpts' tokens are kept, so that a one-shot `recall context` chooses without
    // loading a vocabulary.
    let rows = index_rows(&messages, &earlier, last_n, true, |term| {
        count_at(tx, DF_AT, &[&id, &term, &done])
    })?;
    let mut doc = tx.prepare_cached(INSERT_DOC)?;
    for (seq, n, terms, tokens) in &rows.docs {
        let terms = serde_json::to_string(terms)
            .map_err(|e| StoreError::Internal(format!("cannot encode index terms: {e}")))?;
        let (o200k, cl100k) = (tokens.map(|t| t.0), tokens.map(|t| t.1));
        doc.execute(named(&[&id, seq, n, &terms, &o200k, &cl100k]).as_slice())?;
    }
    let mut posting = tx.prepare_cached(INSERT_POSTING)?;
    for (term, seq, weight, df) in &rows.postings {
        posting.execute(named(&[&id, term, seq, weight, df]).as_slice())?;
    }
    let reached = match messages.last() {
        Some((seq, _, _, _)) if (messages.len() as i64) == INDEX_BATCH => *seq,
        _ => hi,
    };
    tx.execute(SET_RECALL_PROGRESS, named(&[&id, &reached]).as_slice())?;
    Ok(reached)
}

/// The non-system messages of conversation `id`'s history at or below seq `upto`, newest
/// first, as many as a document takes (`recall_plan::EARLIER_SOURCE`): its own rows, then
/// its parent's at or below its fork point, and so on.
fn earlier(tx: &Connection, id: &str, upto: i64) -> Result<Vec<IndexSource>, StoreError> {
    let need = recall_core::recall::NEIGHBOUR_WEIGHTS.len();
    let (mut conv, mut upto) = (id.to_string(), upto);
    let mut out: Vec<IndexSource> = Vec::with_capacity(need);
    loop {
        let left = (need - out.len()) as i64;
        let rows: Vec<IndexSource> = tx
            .prepare_cached(EARLIER_SOURCE)?
            .query_map(named(&[&conv, &upto, &left]).as_slice(), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect::<Result<_, _>>()?;
        out.extend(rows);
        if out.len() >= need {
            return Ok(out);
        }
        let parent: Option<(Option<String>, Option<i64>)> = tx
            .prepare_cached(PARENT_OF)?
            .query_row(named(&[&conv]).as_slice(), |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        match parent {
            Some((Some(p), Some(k))) => {
                conv = p;
                upto = upto.min(k);
            }
            _ => return Ok(out),
        }
    }
}

/// The lexical hits over `ranges` (see `recall_plan`): the figures below each range's end,
/// summed along the chain, then each ranked term's best postings.
fn rank(
    conn: &Connection,
    ranges: &[RecallRange],
    terms: &[String],
    limit: usize,
) -> Result<Vec<Ranked>, StoreError> {
    let mut n = 0i64;
    for r in ranges {
        n += count_at(conn, DOCS_AT, &[&r.id, &r.hi])?;
    }
    let terms = recall_core::recall::stems(terms);
    let mut dfs = Vec::with_capacity(terms.len());
    for t in &terms {
        let mut df = 0i64;
        for r in ranges {
            df += count_at(conn, DF_AT, &[&r.id, t, &r.hi])?;
        }
        dfs.push(df.max(0) as u64);
    }
    let per_term = POSTINGS_PER_TERM as i64;
    let mut stmt = conn.prepare_cached(BEST_POSTINGS)?;
    let mut lists = Vec::new();
    for i in ranked_terms(&dfs) {
        let mut per_segment = Vec::with_capacity(ranges.len());
        for r in ranges {
            let best: Vec<Posting> = stmt
                .query_map(
                    named(&[&r.id, &terms[i], &r.hi, &per_term]).as_slice(),
                    |row| {
                        Ok(Posting {
                            seq: row.get(0)?,
                            weight: row.get(1)?,
                        })
                    },
                )?
                .collect::<Result<_, _>>()?;
            per_segment.push(best);
        }
        lists.push(TermList {
            df: dfs[i],
            postings: merge_postings(per_segment),
        });
    }
    Ok(rank_postings(n.max(0) as u64, &lists, limit))
}

/// The messages recall's choice looks at, one point read each on the reader connection
/// (`recall_core::recall::CandidateSource`): a key without a conversation is the message at
/// that seq of the history `segs`; any message must be the tenant's and not a system message.
struct PointReads<'c> {
    conn: &'c Connection,
    tenant: &'c str,
    segs: &'c [Segment],
    sql: String,
    tokenizer: Tokenizer,
    escape: bool,
}

impl CandidateSource for PointReads<'_> {
    type Error = StoreError;

    fn fetch(&mut self, key: &RecallKey) -> Result<Option<RecallCandidate>, StoreError> {
        let conv = match &key.conversation_id {
            Some(c) => c.as_str(),
            None => match owner(self.segs, key.seq) {
                Some(s) => s.id.as_str(),
                None => return Ok(None),
            },
        };
        let mut stmt = self.conn.prepare_cached(&self.sql)?;
        let mut rows = stmt.query(named(&[&conv, &key.seq, &self.tenant]).as_slice())?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let m = stored_message(row)?;
        Ok(Some(RecallCandidate {
            conversation_id: crate::search::recall_key_conversation(self.segs, conv, m.seq),
            seq: m.seq,
            message: m.message,
            at: Some(m.created_at),
        }))
    }

    /// The excerpt's tokens the index keeps (escaped, this history's header), for the BPE
    /// vocabularies.
    fn known_tokens(&mut self, key: &RecallKey) -> Result<Option<u64>, StoreError> {
        let sql = match self.tokenizer {
            Tokenizer::O200k => DOC_TOKENS_O200K,
            Tokenizer::Cl100k => DOC_TOKENS_CL100K,
            Tokenizer::Chars4 => return Ok(None),
        };
        if !self.escape || key.conversation_id.is_some() {
            return Ok(None);
        }
        let Some(seg) = owner(self.segs, key.seq) else {
            return Ok(None);
        };
        let n: Option<Option<i64>> = self
            .conn
            .prepare_cached(sql)?
            .query_row(named(&[&seg.id, &key.seq]).as_slice(), |r| r.get(0))
            .optional()?;
        Ok(n.flatten().and_then(|n| u64::try_from(n).ok()))
    }

    fn known_frame_tokens(&self, scope: RecallScope) -> Option<u64> {
        known_frame_tokens(scope, self.tokenizer)
    }
}

impl SqliteStore {
    /// The parts of conversation `id`'s history that `query` may reach (`conversation`
    /// scope), and whether its lexical index covers all of them. Nothing is indexed here:
    /// [`crate::Store::catch_up_recall`] does that.
    fn recall_index(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
    ) -> Result<(Vec<RecallRange>, bool), StoreError> {
        self.read(|c| {
            let ranges = recall_ranges(&forks::chain(c, tenant, id)?, query.before);
            let last: i64 = c
                .prepare_cached(LAST_SEQ)?
                .query_row(named(&[&id]).as_slice(), |r| r.get(0))?;
            let mut complete = true;
            for r in &ranges {
                // The conversation's own range reaches its newest message at most.
                let top = if r.id == id { r.hi.min(last) } else { r.hi };
                complete &= progress(c, &r.id)? >= top;
            }
            Ok((ranges, complete))
        })
    }
}

#[async_trait]
impl RecallOps for SqliteStore {
    /// Up to the newest message: the conversation's own range is open-ended.
    async fn recall_behind(&self, c: Conv<'_>) -> Result<Vec<(String, i64)>, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        let last = crate::conversations::get(self, c).await?.last_seq;
        self.read(|c| {
            let mut behind = Vec::new();
            for r in recall_ranges(&forks::chain(c, tenant, id)?, last + 1) {
                if progress(c, &r.id)? < r.hi {
                    behind.push((r.id, r.hi));
                }
            }
            Ok(behind)
        })
    }

    /// On the writer.
    async fn recall_index_batch(&self, seg: String, hi: i64) -> Result<i64, StoreError> {
        self.writer.write(move |tx| index_batch(tx, &seg, hi)).await
    }

    /// Over the recall index as far as it is caught up.
    async fn conversation_hits(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
    ) -> Result<RecallHits, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        let (ranges, complete) = self.recall_index(tenant, id, query)?;
        let hits = self.read(|c| rank(c, &ranges, &query.terms, query.limit))?;
        Ok(RecallHits { hits, complete })
    }

    /// FTS5 bm25 hits over the tenant's messages (`tenant` scope), the search index caught
    /// up first.
    async fn tenant_hits(
        &self,
        c: Conv<'_>,
        query: &RecallQuery,
    ) -> Result<Vec<Ranked>, StoreError> {
        let (tenant, id) = (c.tenant, c.id);
        if search::pending(&self.conns, tenant)? {
            let tenant = tenant.to_string();
            self.writer
                .write(move |tx| search::catch_up(tx, &tenant))
                .await?;
        }
        let expr = or_expression(&query.terms);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let segs = self.read(|c| forks::chain(c, tenant, id))?;
        let hits = self.read(|c| {
            // `rank` is bm25(): lower is better; the score reported is its negation.
            let sql =
                "SELECT CASE WHEN t.conversation_id = $2 THEN NULL ELSE t.conversation_id END, \
                 t.seq, -bm25(message_fts) FROM message_fts \
                 JOIN message_text t ON t.id = message_fts.rowid \
                 JOIN conversations c ON c.id = t.conversation_id \
                 JOIN messages m ON m.conversation_id = t.conversation_id AND m.seq = t.seq \
                 WHERE message_fts MATCH $1 AND c.tenant = $3 \
                 AND (t.conversation_id <> $2 OR t.seq < $4) AND m.role <> 'system' \
                 ORDER BY rank, t.conversation_id, t.seq LIMIT $5";
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt
                .query_map(
                    named(&[&expr, &id, &tenant, &query.before, &limit]).as_slice(),
                    |r| Ok(Ranked::new(r.get(0)?, r.get(1)?, r.get(2)?)),
                )?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        Ok(crate::search::tenant_hits_in_history(&segs, query, hits))
    }

    async fn read_pairs(
        &self,
        tenant: &str,
        pairs: &[(String, i64)],
    ) -> Result<Vec<(String, StoredMessage)>, StoreError> {
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
                out.push((row.get(11)?, stored_message(row)?));
            }
            Ok(out)
        })
    }

    /// Read lazily: one read transaction, a point read per message the choice looks at.
    async fn recall_choice(&self, c: Choice<'_>) -> Result<RecallSection, StoreError> {
        let Choice {
            conv,
            query,
            hits,
            tokenizer,
            escape,
            complete,
        } = c;
        let (tenant, id) = (conv.tenant, conv.id);
        self.read(|c| {
            // One snapshot for the chain and every read.
            let tx = c.unchecked_transaction()?;
            let segs = forks::chain(&tx, tenant, id)?;
            let mut source = PointReads {
                conn: &tx,
                tenant,
                segs: &segs,
                sql: format!(
                    "SELECT {} FROM messages m JOIN conversations c ON c.id = m.conversation_id \
                     AND c.tenant = $3 WHERE m.conversation_id = $1 AND m.seq = $2 \
                     AND m.role <> 'system'",
                    message_columns_of("m")
                ),
                tokenizer,
                escape,
            };
            let section = choose_from(query, hits, &mut source, &tokenizer, escape, complete)?;
            tx.commit()?;
            Ok(section)
        })
    }
}
