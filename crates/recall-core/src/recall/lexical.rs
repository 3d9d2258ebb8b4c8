//! Recall's lexical ranking: one definition for a conversation held in memory (`recall
//! render`) and for both stores, so that each recalls the same messages with the same scores
//! (docs/FORMAT-DECISIONS.md, "Recall", its "Ranking" item).
//!
//! BM25 with OR semantics over the query's content words, computed from per-message term
//! weights that are fixed when a message is indexed, so that a store ranks from the best
//! postings of each term instead of scoring every message that holds a common word:
//!
//! - a message's **document** ([`document`]) is more than its own words: its terms are the
//!   stems ([`stem`]) of its content words, those of the two messages before it at lower
//!   weights ([`NEIGHBOUR_WEIGHTS`]: a reply such as "Yes, every weekend!" is found by the
//!   question it answers), and the month and year it was written ([`DATE_WEIGHT`]: "what did
//!   she do in June?"). It depends only on what came before the message, so it never changes
//!   once written, and a fork, which shares its parent's earlier messages, has the same
//!   documents as a copy of its history;
//! - a message's **weight** for a term is BM25's saturated term frequency against a fixed
//!   reference length ([`term_weight`]): `tf·(k1+1) / (tf + k1·(1 − b + b·len/REF_LEN))`,
//!   `tf` and `len` counted with the document's weights;
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

use super::section::date_of_millis;
use super::terms::{is_stop_word, stem, stems, words, MAX_TERM_BYTES};
use super::{Ranked, RecallCandidate};
use crate::message::Message;

/// BM25's term-frequency saturation (Lucene's and FTS5's default).
pub const K1: f64 = 1.2;
/// BM25's length normalisation (Lucene's and FTS5's default).
pub const B: f64 = 0.75;
/// The document length, in weighted words, that length normalisation is relative to (a fixed
/// stand-in for BM25's average length, so that weights can be stored): a chat message of
/// about 32 words with its two [`NEIGHBOUR_WEIGHTS`]-weighted predecessors.
pub const REF_LEN: f64 = 56.0;
/// The weights of the words of the message right before a message, and of the one before
/// that, in its document ([`document`]); its own words weigh 1.
pub const NEIGHBOUR_WEIGHTS: [f64; 2] = [0.5, 0.25];
/// The weight of each of a message's date terms (its month's name and its year) in its
/// document.
pub const DATE_WEIGHT: f64 = 0.5;
/// Postings read per query term: the best ones.
pub const POSTINGS_PER_TERM: usize = 64;
/// Query terms a ranking uses at most: the rarest.
pub const RANKED_TERMS: usize = 12;

/// The searchable text of a message, as both stores index it: string content, or its text
/// blocks joined with `"\n"` (tool inputs, results, images and documents are not searched).
pub fn searchable_text(m: &Message) -> String {
    m.joined_text()
}

/// The month names a message's date term is made of.
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A message's document for the lexical ranking: its terms with their weighted frequencies,
/// sorted by term, and its weighted length.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub terms: Vec<(String, f64)>,
    pub len: f64,
}

/// The document of a message whose searchable text ([`searchable_text`]) is `own`: the stems
/// of its content words (stop words and words over [`MAX_TERM_BYTES`] left out), those of
/// `earlier` (the searchable texts of the messages before it, nearest first; only the first
/// [`NEIGHBOUR_WEIGHTS`]`.len()` are used) at [`NEIGHBOUR_WEIGHTS`], and with `at` (when it
/// was written, milliseconds since the Unix epoch) the stems of its month's name and its year
/// at [`DATE_WEIGHT`]. Its length counts every word (stop words too) at the weight of the
/// text it is in, and the date terms.
///
/// ```
/// use recall_core::recall::document;
/// let d = document("The cats saw the other cat.", &[], None);
/// assert_eq!(d.terms, [("cat".to_string(), 2.0), ("saw".to_string(), 1.0)]);
/// assert_eq!(d.len, 6.0);
/// // The message before weighs half; 2023-06-09 adds "june" and "2023".
/// let d = document("Yes, every weekend!", &["Do you still paint?"], Some(1_686_300_000_000));
/// assert!(d.terms.contains(&("paint".to_string(), 0.5)));
/// assert!(d.terms.contains(&("june".to_string(), 0.5)));
/// assert!(d.terms.contains(&("2023".to_string(), 0.5)));
/// ```
pub fn document(own: &str, earlier: &[&str], at: Option<i64>) -> Document {
    let mut tf: HashMap<String, f64> = HashMap::new();
    let mut len = 0.0;
    let texts = std::iter::once((own, 1.0))
        .chain(earlier.iter().zip(NEIGHBOUR_WEIGHTS).map(|(t, w)| (*t, w)));
    for (text, weight) in texts {
        for w in words(text) {
            len += weight;
            if w.len() <= MAX_TERM_BYTES && !is_stop_word(&w) {
                *tf.entry(stem(&w)).or_default() += weight;
            }
        }
    }
    if let Some(ms) = at {
        let date = date_of_millis(ms);
        let month = date
            .get(5..7)
            .and_then(|m| m.parse::<usize>().ok())
            .and_then(|m| MONTHS.get(m.wrapping_sub(1)));
        let year = date.get(0..4);
        for term in [month.map(|m| stem(m)), year.map(str::to_string)]
            .into_iter()
            .flatten()
        {
            len += DATE_WEIGHT;
            *tf.entry(term).or_default() += DATE_WEIGHT;
        }
    }
    let mut terms: Vec<(String, f64)> = tf.into_iter().collect();
    terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Document { terms, len }
}

/// A document's weight for a term it holds `tf` times (weighted), `len` its weighted length.
///
/// ```
/// use recall_core::recall::{term_weight, REF_LEN};
/// // More occurrences weigh more, a longer document less.
/// assert!(term_weight(2.0, REF_LEN) > term_weight(1.0, REF_LEN));
/// assert!(term_weight(1.0, 2.0 * REF_LEN) < term_weight(1.0, REF_LEN));
/// assert_eq!(term_weight(1.0, REF_LEN), 1.0);
/// ```
pub fn term_weight(tf: f64, len: f64) -> f64 {
    tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / REF_LEN))
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
    /// An index over `(seq, searchable text, time)` documents in history order (oldest
    /// first): each document takes the texts before it as its earlier neighbours
    /// ([`document`]).
    pub fn new<'a>(docs: impl IntoIterator<Item = (i64, &'a str, Option<i64>)>) -> LexicalIndex {
        let mut index = LexicalIndex::default();
        let mut earlier: Vec<&str> = Vec::with_capacity(NEIGHBOUR_WEIGHTS.len() + 1);
        for (seq, text, at) in docs {
            index.docs += 1;
            let doc = document(text, &earlier, at);
            for (term, tf) in doc.terms {
                index.lists.entry(term).or_default().push(Posting {
                    seq,
                    weight: term_weight(tf, doc.len),
                });
            }
            earlier.insert(0, text);
            earlier.truncate(NEIGHBOUR_WEIGHTS.len());
        }
        for list in index.lists.values_mut() {
            list.sort_by(posting_order);
        }
        index
    }

    /// An index over the searchable text ([`searchable_text`]) of `candidates`, in seq order.
    pub fn over(candidates: &[RecallCandidate]) -> LexicalIndex {
        let mut sorted: Vec<&RecallCandidate> = candidates.iter().collect();
        sorted.sort_by_key(|c| c.seq);
        let texts: Vec<String> = sorted.iter().map(|c| searchable_text(&c.message)).collect();
        LexicalIndex::new(
            sorted
                .iter()
                .zip(&texts)
                .map(|(c, t)| (c.seq, t.as_str(), c.at)),
        )
    }

    /// How many messages hold `term`.
    pub fn df(&self, term: &str) -> u64 {
        self.lists.get(term).map_or(0, |l| l.len() as u64)
    }

    /// The hits for query terms `terms` ([`rank_postings`] over the [`ranked_terms`] of their
    /// [`stems`]), at most `limit`.
    pub fn rank(&self, terms: &[String], limit: usize) -> Vec<Ranked> {
        let terms = stems(terms);
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
            (1, "the cat sat", None),
            (2, "a dog barked at the cat", None),
            (3, "nothing here", None),
            (4, "the dog", None),
            (5, "dog dog dog", None),
        ]);
        let r = idx.rank(&["cat".into(), "dog".into()], 10);
        let seqs: Vec<i64> = r.iter().map(|h| h.seq).collect();
        // Seq 2 has both; 3 has them only from the messages before it, at lower weights.
        assert_eq!(seqs[0], 2);
        assert_eq!(seqs.len(), 5);
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
                .map(|(i, t)| (i as i64, t.as_str(), None)),
        );
        let r = idx.rank(&["common".into()], 1000);
        assert_eq!(r.len(), POSTINGS_PER_TERM);
        // The first short message with two earlier neighbours holding the term weighs most.
        assert_eq!(r[0].seq, 2);
        assert!(r.iter().all(|h| h.seq < POSTINGS_PER_TERM as i64 + 2));
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
        // Far apart in seq but in history order, each message alone of its term's run: the
        // neighbours of a run's first messages hold the previous run's term.
        let idx = LexicalIndex::new(docs.iter().map(|(s, t)| (*s, t.as_str(), None)));
        let r = idx.rank(&many, 10_000);
        // The three commonest terms are left out: only their first messages (neighbours of
        // a ranked term's run) can be hits.
        let late = r.iter().filter(|h| h.seq >= (RANKED_TERMS * 100) as i64);
        assert!(
            late.clone().all(|h| h.seq % 100 < 2),
            "{:?}",
            late.collect::<Vec<_>>()
        );
    }

    #[test]
    fn documents_leave_out_stop_words_and_long_words() {
        let long = "x".repeat(MAX_TERM_BYTES + 1);
        let d = document(&format!("the {long} Paris paris"), &[], None);
        assert_eq!(d.terms, [("pari".to_string(), 2.0)]);
        assert_eq!(d.len, 4.0);
    }

    #[test]
    fn documents_take_two_earlier_neighbours_at_lower_weights() {
        let d = document("apple", &["banana", "cherry", "damson"], None);
        let weights: HashMap<String, f64> = d.terms.into_iter().collect();
        assert_eq!(weights["appl"], 1.0);
        assert_eq!(weights["banana"], NEIGHBOUR_WEIGHTS[0]);
        assert_eq!(weights["cherri"], NEIGHBOUR_WEIGHTS[1]);
        assert!(!weights.contains_key("damson"));
        assert_eq!(d.len, 1.0 + NEIGHBOUR_WEIGHTS[0] + NEIGHBOUR_WEIGHTS[1]);
    }

    #[test]
    fn a_reply_is_found_by_the_question_before_it() {
        let idx = LexicalIndex::new([
            (1, "Do you still go climbing?", None),
            (2, "Yes, every weekend at the gym.", None),
            (3, "What did you cook?", None),
        ]);
        let seqs: Vec<i64> = idx
            .rank(&["climbing".into()], 10)
            .iter()
            .map(|h| h.seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3]);
    }

    #[test]
    fn dates_are_terms() {
        // 2023-06-09 and 2024-01-15.
        let idx = LexicalIndex::new([
            (1, "We went hiking.", Some(1_686_300_000_000)),
            (2, "We went hiking.", Some(1_705_300_000_000)),
        ]);
        let best = |q: &str| idx.rank(&crate::recall::query_terms(q), 10)[0].seq;
        assert_eq!(best("hiking in June"), 1);
        assert_eq!(best("hiking in January 2024"), 2);
    }
}
