//! Recall's lexical ranking: one definition for a conversation held in memory (`recall
//! render`) and for both stores, so that each recalls the same messages with the same scores
//! (docs/FORMAT-DECISIONS.md, "Recall", its "Ranking" item).
//!
//! BM25 with OR semantics over the query's content words, computed from per-message term
//! weights that are fixed when a message is indexed, so that a store ranks from the best
//! postings of each term instead of scoring every message that holds a common word:
//!
//! - a message's **weight** for a term is BM25's saturated term frequency against a fixed
//!   reference length ([`term_weight`]): `tf·(k1+1) / (tf + k1·(1 − b + b·len/REF_LEN))`,
//!   `len` the message's length in words. It never changes once written;
//! - a term's **idf** comes from the messages that may be recalled — those older than the
//!   window, `N` of them, `df` holding the term: `ln(1 + (N − df + 0.5)/(df + 0.5))`
//!   ([`idf`]);
//! - the ranking uses the query's [`RANKED_TERMS`] rarest terms that occur at all
//!   ([`ranked_terms`]) and, for each, only its [`POSTINGS_PER_TERM`] best postings (highest
//!   weight, then newest); a message's score is the sum of idf × weight over the lists it is
//!   in ([`rank_postings`]).
//!
//! The last rule is what makes the cost of a ranking independent of the conversation's
//! length: a store reads at most `RANKED_TERMS × POSTINGS_PER_TERM` postings, through an
//! index ordered by weight. A message that holds many query terms, none of them among its
//! best, can rank lower than under textbook BM25; the best message of every term is always
//! a candidate.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::terms::{is_stop_word, words, MAX_TERM_BYTES};
use super::{Ranked, RecallCandidate};
use crate::message::Message;

/// BM25's term-frequency saturation (Lucene's and FTS5's default).
pub const K1: f64 = 1.2;
/// BM25's length normalisation (Lucene's and FTS5's default).
pub const B: f64 = 0.75;
/// The message length, in words, that length normalisation is relative to (a fixed stand-in
/// for BM25's average length, so that weights can be stored): about a chat message.
pub const REF_LEN: f64 = 32.0;
/// Postings read per query term: the best ones.
pub const POSTINGS_PER_TERM: usize = 64;
/// Query terms a ranking uses at most: the rarest.
pub const RANKED_TERMS: usize = 12;

/// The searchable text of a message, as both stores index it: string content, or its text
/// blocks joined with `"\n"` (tool inputs, results, images and documents are not searched).
pub fn searchable_text(m: &Message) -> String {
    m.joined_text()
}

/// The index terms of a message's searchable text: its content words (stop words and words
/// over [`MAX_TERM_BYTES`] left out) with how often each occurs, sorted by term; and its
/// length in words (every word counts).
///
/// ```
/// let (terms, len) = recall_core::recall::doc_terms("The cat saw the other cat.");
/// assert_eq!(terms, [("cat".to_string(), 2), ("saw".to_string(), 1)]);
/// assert_eq!(len, 6);
/// ```
pub fn doc_terms(text: &str) -> (Vec<(String, u32)>, u32) {
    let mut tf: HashMap<String, u32> = HashMap::new();
    let mut len = 0u32;
    for w in words(text) {
        len = len.saturating_add(1);
        if w.len() <= MAX_TERM_BYTES && !is_stop_word(&w) {
            *tf.entry(w).or_default() += 1;
        }
    }
    let mut terms: Vec<(String, u32)> = tf.into_iter().collect();
    terms.sort_unstable();
    (terms, len)
}

/// A message's weight for a term it holds `tf` times, `len` its length in words.
///
/// ```
/// use recall_core::recall::term_weight;
/// // More occurrences weigh more, a longer message less.
/// assert!(term_weight(2, 32) > term_weight(1, 32));
/// assert!(term_weight(1, 64) < term_weight(1, 32));
/// assert_eq!(term_weight(1, 32), 1.0);
/// ```
pub fn term_weight(tf: u32, len: u32) -> f64 {
    let tf = f64::from(tf);
    tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * f64::from(len) / REF_LEN))
}

/// The idf of a term `df` of `n` candidate messages hold (Lucene's form, never negative, so
/// a term found in most messages still counts a little).
pub fn idf(n: u64, df: u64) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// One message in a term's list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Posting {
    pub seq: i64,
    pub weight: f64,
}

/// Best first: higher weight, then the newer message.
pub fn posting_order(a: &Posting, b: &Posting) -> Ordering {
    b.weight.total_cmp(&a.weight).then(b.seq.cmp(&a.seq))
}

/// One ranked term: how many candidate messages hold it, and its best postings
/// ([`posting_order`]; only the first [`POSTINGS_PER_TERM`] are used).
#[derive(Debug, Clone, PartialEq)]
pub struct TermList {
    pub df: u64,
    pub postings: Vec<Posting>,
}

/// Which of the query's terms rank, given how many candidates hold each (`dfs`, in query
/// order): those held by some candidate, the [`RANKED_TERMS`] rarest (ties: the earlier in
/// the query), returned in query order.
///
/// ```
/// use recall_core::recall::ranked_terms;
/// assert_eq!(ranked_terms(&[5, 0, 1, 5]), [0, 2, 3]);
/// ```
pub fn ranked_terms(dfs: &[u64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..dfs.len()).filter(|&i| dfs[i] > 0).collect();
    idx.sort_by_key(|&i| (dfs[i], i));
    idx.truncate(RANKED_TERMS);
    idx.sort_unstable();
    idx
}

/// The lexical hits of `lists` (the ranked terms, in query order) over `n` candidate
/// messages: every message in a list's first [`POSTINGS_PER_TERM`] postings, scored by the
/// sum of idf × weight over those lists (added in list order), best first (ties: older
/// first), at most `limit`.
pub fn rank_postings(n: u64, lists: &[TermList], limit: usize) -> Vec<Ranked> {
    let mut scores: HashMap<i64, f64> = HashMap::new();
    for list in lists {
        let w = idf(n, list.df);
        for p in list.postings.iter().take(POSTINGS_PER_TERM) {
            *scores.entry(p.seq).or_insert(0.0) += w * p.weight;
        }
    }
    let mut out: Vec<Ranked> = scores
        .into_iter()
        .map(|(seq, score)| Ranked::new(None, seq, score))
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.seq.cmp(&b.seq)));
    out.truncate(limit);
    out
}

/// The ranking over messages held in memory: each message's postings, by term.
#[derive(Debug, Clone, Default)]
pub struct LexicalIndex {
    docs: u64,
    lists: HashMap<String, Vec<Posting>>,
}

impl LexicalIndex {
    /// An index over `(seq, text)` documents.
    pub fn new<'a>(docs: impl IntoIterator<Item = (i64, &'a str)>) -> LexicalIndex {
        let mut index = LexicalIndex::default();
        for (seq, text) in docs {
            index.docs += 1;
            let (terms, len) = doc_terms(text);
            for (term, tf) in terms {
                index.lists.entry(term).or_default().push(Posting {
                    seq,
                    weight: term_weight(tf, len),
                });
            }
        }
        for list in index.lists.values_mut() {
            list.sort_by(posting_order);
        }
        index
    }

    /// An index over the searchable text ([`searchable_text`]) of `candidates`.
    pub fn over(candidates: &[RecallCandidate]) -> LexicalIndex {
        let texts: Vec<String> = candidates
            .iter()
            .map(|c| searchable_text(&c.message))
            .collect();
        LexicalIndex::new(
            candidates
                .iter()
                .zip(&texts)
                .map(|(c, t)| (c.seq, t.as_str())),
        )
    }

    /// How many messages hold `term`.
    pub fn df(&self, term: &str) -> u64 {
        self.lists.get(term).map_or(0, |l| l.len() as u64)
    }

    /// The hits for `terms` ([`rank_postings`] over the [`ranked_terms`]), at most `limit`.
    pub fn rank(&self, terms: &[String], limit: usize) -> Vec<Ranked> {
        let dfs: Vec<u64> = terms.iter().map(|t| self.df(t)).collect();
        let lists: Vec<TermList> = ranked_terms(&dfs)
            .into_iter()
            .map(|i| TermList {
                df: dfs[i],
                postings: self
                    .lists
                    .get(&terms[i])
                    .map(|l| l.iter().take(POSTINGS_PER_TERM).copied().collect())
                    .unwrap_or_default(),
            })
            .collect();
        rank_postings(self.docs, &lists, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn or_semantics_and_rarer_terms_weigh_more() {
        let idx = LexicalIndex::new([
            (1, "the cat sat"),
            (2, "a dog barked at the cat"),
            (3, "nothing here"),
            (4, "the dog"),
            (5, "dog dog dog"),
        ]);
        let r = idx.rank(&["cat".into(), "dog".into()], 10);
        let seqs: Vec<i64> = r.iter().map(|h| h.seq).collect();
        // Seq 2 has both; 3 has neither.
        assert_eq!(seqs[0], 2);
        assert!(!seqs.contains(&3));
        assert_eq!(seqs.len(), 4);
        assert!(idx.rank(&[], 10).is_empty());
        assert!(idx.rank(&["zebra".into()], 10).is_empty());
    }

    #[test]
    fn only_the_best_postings_of_a_term_count() {
        // 100 messages hold "common"; the shortest ones weigh most.
        let texts: Vec<String> = (0..100)
            .map(|i| format!("common {}", "filler ".repeat(i)))
            .collect();
        let idx = LexicalIndex::new(
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| (i as i64, t.as_str())),
        );
        let r = idx.rank(&["common".into()], 1000);
        assert_eq!(r.len(), POSTINGS_PER_TERM);
        assert_eq!(r[0].seq, 0);
        assert!(r.iter().all(|h| h.seq < POSTINGS_PER_TERM as i64));
    }

    #[test]
    fn the_rarest_terms_rank() {
        let many: Vec<String> = (0..RANKED_TERMS + 3).map(|i| format!("t{i}")).collect();
        // Term i is held by i + 1 messages.
        let mut docs: Vec<(i64, String)> = Vec::new();
        for (i, t) in many.iter().enumerate() {
            for k in 0..=i {
                docs.push(((i * 100 + k) as i64, t.clone()));
            }
        }
        let idx = LexicalIndex::new(docs.iter().map(|(s, t)| (*s, t.as_str())));
        let r = idx.rank(&many, 10_000);
        // The three commonest terms are left out.
        assert!(r.iter().all(|h| h.seq < (RANKED_TERMS * 100) as i64));
    }

    #[test]
    fn doc_terms_leave_out_stop_words_and_long_words() {
        let long = "x".repeat(MAX_TERM_BYTES + 1);
        let (terms, len) = doc_terms(&format!("the {long} Paris paris"));
        assert_eq!(terms, [("paris".to_string(), 2)]);
        assert_eq!(len, 4);
    }
}
