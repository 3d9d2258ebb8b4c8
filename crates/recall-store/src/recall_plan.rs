//! Recall's lexical index, the part both databases share (migration 0007): the rows a
//! catch-up writes, the ranges a ranking reads along a fork's chain, how the figures read
//! from each segment combine, and the SQL text. The ranking itself is recall-core's
//! (`recall_core::recall::rank_postings`), the same function `recall render` runs in memory,
//! so a conversation recalls the same messages from either database and from memory.
//!
//! What the index holds, per conversation (its own rows; a fork reads its parent's postings
//! for its prefix, as it reads the parent's messages):
//! - `recall_docs`: one row per indexed message that is not a system message, with `n`, the
//!   number of such messages up to it;
//! - `recall_postings`: one row per (message, term), with the message's weight for the term
//!   and `df`, the number of indexed messages up to it that hold the term;
//! - `recall_progress.recall_seq`: every message at or below it is indexed.
//!
//! Because `n` and `df` are running counts, the figures of the messages below any seq are one
//! probe each, whatever the conversation's length; a ranking reads at most
//! `RANKED_TERMS × POSTINGS_PER_TERM` postings through `recall_postings_best`.

use std::collections::HashMap;

use recall_core::message::{Message, Role};
use recall_core::recall::{
    document, excerpt_tokens, posting_order, searchable_text, term_weight, Document, Posting,
    NEIGHBOUR_WEIGHTS, POSTINGS_PER_TERM,
};
use recall_core::tokens::Tokenizer;

use crate::error::StoreError;
use crate::fork_plan::Segment;

/// Messages a catch-up indexes per transaction: a large backlog never holds the writer long.
pub(crate) const INDEX_BATCH: i64 = 1_000;

/// One segment of a history as recall reads it: conversation `id`'s rows with
/// `after < seq <= hi`, `hi` below the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecallRange {
    pub id: String,
    pub after: i64,
    pub hi: i64,
}

/// The parts of a history (`segs`, newest first) recall may reach below seq `before`, newest
/// first; segments with nothing below it are left out.
pub(crate) fn recall_ranges(segs: &[Segment], before: i64) -> Vec<RecallRange> {
    segs.iter()
        .map(|s| RecallRange {
            id: s.id.clone(),
            after: s.after,
            hi: s.upto.min(before.saturating_sub(1)),
        })
        .filter(|r| r.hi > r.after)
        .collect()
}

/// A message row of a catch-up: seq, role, content (as stored), created at.
pub(crate) type IndexSource = (i64, String, String, i64);

/// A `recall_docs` row: seq, n, terms, the excerpt's tokens (o200k, cl100k) when counted.
pub(crate) type DocRow = (i64, i64, Vec<String>, Option<(i64, i64)>);

/// What a catch-up writes for a batch of messages.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct IndexRows {
    pub docs: Vec<DocRow>,
    /// term, seq, weight, df.
    pub postings: Vec<(String, i64, f64, i64)>,
}

/// The documents of `messages` (one conversation's, oldest first; system messages left
/// out): each message's searchable text with those of the non-system messages before it
/// (`earlier`: the searchable texts of the ones before the batch, nearest first, as
/// [`EARLIER_SOURCE`] reads them) and its time (`recall_core::recall::document`).
fn documents(
    messages: &[IndexSource],
    earlier: &[String],
) -> Result<Vec<(i64, Message, i64, Document)>, StoreError> {
    let mut before: Vec<String> = earlier.to_vec();
    let mut out = Vec::with_capacity(messages.len());
    for (seq, role, content, at) in messages {
        if role == Role::System.as_str() {
            continue;
        }
        let m: Message = crate::codec::decode_message(*seq, role, content, None, None)?;
        let text = searchable_text(&m);
        let refs: Vec<&str> = before.iter().map(String::as_str).collect();
        let doc = document(&text, &refs, Some(*at));
        before.insert(0, text);
        before.truncate(NEIGHBOUR_WEIGHTS.len());
        out.push((*seq, m, *at, doc));
    }
    Ok(out)
}

/// The searchable texts of `rows` (as [`EARLIER_SOURCE`] reads them: newest first), for
/// [`index_rows`]'s `earlier`.
pub(crate) fn earlier_texts(rows: &[IndexSource]) -> Result<Vec<String>, StoreError> {
    rows.iter()
        .map(|(seq, role, content, _)| {
            crate::codec::decode_message(*seq, role, content, None, None)
                .map(|m| searchable_text(&m))
        })
        .collect()
}

/// Plans the rows for `messages` (one conversation's, oldest first, all above its
/// `recall_seq`), `earlier` the searchable texts of the non-system messages of its history
/// just before them, nearest first ([`earlier_texts`]). `last_n` is the `n` of its newest
/// indexed message (0 for none); `df_of` reads a term's `df` at its newest posting (0 for
/// none). System messages are not indexed. With `tokens`, each message's excerpt is counted
/// under both vocabularies (`excerpt_tokens`, escaped).
pub(crate) fn index_rows(
    messages: &[IndexSource],
    earlier: &[String],
    last_n: i64,
    tokens: bool,
    mut df_of: impl FnMut(&str) -> Result<i64, StoreError>,
) -> Result<IndexRows, StoreError> {
    let mut rows = IndexRows::default();
    let mut n = last_n;
    let mut dfs: HashMap<String, i64> = HashMap::new();
    for (seq, m, at, doc) in documents(messages, earlier)? {
        let counted = tokens.then(|| {
            let count = |t: Tokenizer| {
                i64::try_from(excerpt_tokens(seq, Some(at), &m, true, &t)).unwrap_or(i64::MAX)
            };
            (count(Tokenizer::O200k), count(Tokenizer::Cl100k))
        });
        n += 1;
        for (term, tf) in &doc.terms {
            let df = match dfs.get_mut(term.as_str()) {
                Some(df) => df,
                None => {
                    let stored = df_of(term)?;
                    dfs.entry(term.clone()).or_insert(stored)
                }
            };
            *df += 1;
            rows.postings
                .push((term.clone(), seq, term_weight(*tf, doc.len), *df));
        }
        rows.docs.push((
            seq,
            n,
            doc.terms.into_iter().map(|(t, _)| t).collect(),
            counted,
        ));
    }
    Ok(rows)
}

/// The distinct terms of the documents of `messages` (as [`index_rows`] makes them), sorted:
/// what a catch-up looks up the stored `df` of, all at once.
pub(crate) fn batch_terms(
    messages: &[IndexSource],
    earlier: &[String],
) -> Result<Vec<String>, StoreError> {
    let mut all: Vec<String> = documents(messages, earlier)?
        .into_iter()
        .flat_map(|(_, _, _, d)| d.terms.into_iter().map(|(t, _)| t))
        .collect();
    all.sort_unstable();
    all.dedup();
    Ok(all)
}

/// The best postings of a term over a history: each segment's best (at most
/// [`POSTINGS_PER_TERM`] each), merged.
pub(crate) fn merge_postings(per_segment: Vec<Vec<Posting>>) -> Vec<Posting> {
    let mut all: Vec<Posting> = per_segment.into_iter().flatten().collect();
    all.sort_by(posting_order);
    all.truncate(POSTINGS_PER_TERM);
    all
}

/// How far conversation `$1` is indexed (no row: 0).
pub(crate) const RECALL_PROGRESS: &str =
    "SELECT recall_seq FROM recall_progress WHERE conversation_id = $1";

/// Marks conversation `$1` indexed up to `$2`.
pub(crate) const SET_RECALL_PROGRESS: &str =
    "INSERT INTO recall_progress (conversation_id, recall_seq) VALUES ($1, $2) \
     ON CONFLICT (conversation_id) DO UPDATE SET recall_seq = excluded.recall_seq";

/// Messages of conversation `$1` with `$2 < seq <= $3`, oldest first, at most `$4`: seq,
/// role, content, created at.
pub(crate) const INDEX_SOURCE: &str = "SELECT seq, role, content, created_at FROM messages \
     WHERE conversation_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4";

/// The messages a batch's first documents take as their earlier neighbours: conversation
/// `$1`'s non-system messages at or below seq `$2`, newest first, `$3` at most. A fork whose
/// own rows hold fewer goes on in its parent at or below its `fork_seq` ([`PARENT_OF`]).
pub(crate) const EARLIER_SOURCE: &str = "SELECT seq, role, content, created_at FROM messages \
     WHERE conversation_id = $1 AND seq <= $2 AND role <> 'system' ORDER BY seq DESC LIMIT $3";

/// Conversation `$1`'s parent and fork point (both NULL for a conversation that is no fork).
/// The catch-up of both stores (`Store::catch_up_recall`): `index_batch(segment, hi)` over
/// every range `behind` until each reaches its `hi`, or, with a `budget`, until a batch ends
/// past it (one batch at least). True when everything was reached.
pub(crate) async fn catch_up<F, Fut>(
    behind: Vec<(String, i64)>,
    budget: Option<std::time::Duration>,
    mut index_batch: F,
) -> Result<bool, StoreError>
where
    F: FnMut(String, i64) -> Fut,
    Fut: std::future::Future<Output = Result<i64, StoreError>>,
{
    let started = std::time::Instant::now();
    let mut batches = 0;
    for (seg, hi) in behind {
        loop {
            if batches > 0 && budget.is_some_and(|b| started.elapsed() >= b) {
                return Ok(false);
            }
            let reached = index_batch(seg.clone(), hi).await?;
            batches += 1;
            if reached >= hi {
                break;
            }
        }
    }
    Ok(true)
}

/// Conversation `$1`'s newest seq: where its own (open-ended) range of the index ends.
pub(crate) const LAST_SEQ: &str = "SELECT last_seq FROM conversations WHERE id = $1";

pub(crate) const PARENT_OF: &str = "SELECT parent_id, fork_seq FROM conversations WHERE id = $1";

/// Drop conversation `$1`'s whole lexical index, to be indexed again by its next catch-up:
/// what a redaction does to every fork reading the redacted message, whose first documents
/// may hold its words (a document holds the two messages before it, and a fork's first ones
/// are its parent's). The message's own conversation drops its index from the message on by
/// trigger (migration 0007).
pub(crate) const DROP_RECALL_INDEX: [&str; 3] = [
    "DELETE FROM recall_postings WHERE conversation_id = $1",
    "DELETE FROM recall_docs WHERE conversation_id = $1",
    "DELETE FROM recall_progress WHERE conversation_id = $1",
];

/// The `n` of conversation `$1`'s newest indexed message at or below seq `$2`.
pub(crate) const DOCS_AT: &str = "SELECT n FROM recall_docs WHERE conversation_id = $1 \
     AND seq <= $2 ORDER BY seq DESC LIMIT 1";

/// The `df` of term `$2` in conversation `$1` at its newest posting at or below seq `$3`.
pub(crate) const DF_AT: &str = "SELECT df FROM recall_postings WHERE conversation_id = $1 \
     AND term = $2 AND seq <= $3 ORDER BY seq DESC LIMIT 1";

#[cfg(test)]
mod tests {
    use super::*;

    fn text(seq: i64, role: &str, s: &str) -> IndexSource {
        (seq, role.to_string(), serde_json::to_string(s).unwrap(), 0)
    }

    #[test]
    fn running_counts_continue_from_the_stored_ones() {
        let msgs = [
            text(4, "user", "cats and dogs"),
            text(5, "system", "cats rule"),
            text(6, "assistant", "Cats, cats!"),
        ];
        let rows = index_rows(&msgs, &[], 10, false, |t| {
            Ok(if t == "cat" { 3 } else { 0 })
        })
        .unwrap();
        // Terms are stems, with the month and year of the time (0: January 1970); seq 6 holds
        // seq 4's words as its earlier neighbour's (the system message is skipped).
        let terms = |ts: &[&str]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        assert_eq!(
            rows.docs,
            [
                (4, 11, terms(&["1970", "cat", "dog", "januari"]), None),
                (6, 12, terms(&["1970", "cat", "dog", "januari"]), None)
            ]
        );
        let dfs: Vec<(&str, i64, i64)> = rows
            .postings
            .iter()
            .filter(|(t, ..)| t == "cat" || t == "dog")
            .map(|(t, s, _, df)| (t.as_str(), *s, *df))
            .collect();
        assert_eq!(
            dfs,
            [("cat", 4, 4), ("dog", 4, 1), ("cat", 6, 5), ("dog", 6, 2)]
        );
        // Earlier texts carry across batches: the first document of the next batch holds them.
        let next = index_rows(
            &[text(7, "user", "hello")],
            &["cats".into()],
            12,
            false,
            |_| Ok(0),
        )
        .unwrap();
        assert!(next.docs[0].2.contains(&"cat".to_string()));
    }

    #[test]
    fn ranges_stop_below_the_window() {
        let segs = [
            Segment {
                id: "f".into(),
                after: 10,
                upto: i64::MAX,
            },
            Segment {
                id: "p".into(),
                after: 0,
                upto: 10,
            },
        ];
        assert_eq!(
            recall_ranges(&segs, 15),
            [
                RecallRange {
                    id: "f".into(),
                    after: 10,
                    hi: 14
                },
                RecallRange {
                    id: "p".into(),
                    after: 0,
                    hi: 10
                }
            ]
        );
        assert_eq!(
            recall_ranges(&segs, 8),
            [RecallRange {
                id: "p".into(),
                after: 0,
                hi: 7
            }]
        );
    }
}
