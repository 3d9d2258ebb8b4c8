//! An in-memory BM25 index over messages, so a conversation held in memory (`recall render`)
//! is recalled from the way a stored one is (SQLite FTS5 `bm25()`, PostgreSQL
//! `ts_rank_cd`): OR semantics over the query terms, best first.

use std::collections::HashMap;

use super::terms::words;
use super::{Ranked, RecallCandidate};
use crate::message::{Block, Content, Message};

/// BM25's term-frequency saturation (FTS5's and Lucene's default).
const K1: f64 = 1.2;
/// BM25's length normalisation (FTS5's and Lucene's default).
const B: f64 = 0.75;

/// The searchable text of a message, as both stores index it: string content, or its text
/// blocks joined with `"\n"` (tool inputs, results, images and documents are not searched).
pub fn searchable_text(m: &Message) -> String {
    match &m.content {
        Content::Text(s) => s.clone(),
        Content::Blocks(b) => b
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// Term frequencies per document, and each document's length in words.
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    docs: Vec<(i64, HashMap<String, u32>, u32)>,
    total_len: u64,
}

impl Bm25Index {
    /// An index over `(seq, text)` documents.
    pub fn new<'a>(docs: impl IntoIterator<Item = (i64, &'a str)>) -> Bm25Index {
        let mut index = Bm25Index::default();
        for (seq, text) in docs {
            let mut tf: HashMap<String, u32> = HashMap::new();
            let mut len = 0u32;
            for w in words(text) {
                *tf.entry(w).or_default() += 1;
                len += 1;
            }
            index.total_len += u64::from(len);
            index.docs.push((seq, tf, len));
        }
        index
    }

    /// An index over the searchable text ([`searchable_text`]) of `candidates`.
    pub fn over(candidates: &[RecallCandidate]) -> Bm25Index {
        let texts: Vec<String> = candidates
            .iter()
            .map(|c| searchable_text(&c.message))
            .collect();
        Bm25Index::new(
            candidates
                .iter()
                .zip(&texts)
                .map(|(c, t)| (c.seq, t.as_str())),
        )
    }

    /// Documents holding at least one of `terms`, best BM25 score first (ties: older
    /// first), at most `limit`. Lucene's idf, `ln(1 + (N − n + 0.5) / (n + 0.5))`, which is
    /// never negative, so a term found in most documents still counts a little.
    pub fn rank(&self, terms: &[String], limit: usize) -> Vec<Ranked> {
        let n = self.docs.len() as f64;
        if self.docs.is_empty() || terms.is_empty() {
            return Vec::new();
        }
        let avg = (self.total_len as f64 / n).max(1.0);
        let idf: Vec<f64> = terms
            .iter()
            .map(|t| {
                let df = self.docs.iter().filter(|d| d.1.contains_key(t)).count() as f64;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        let mut out: Vec<Ranked> = Vec::new();
        for (seq, tf, len) in &self.docs {
            let mut score = 0.0;
            for (t, idf) in terms.iter().zip(&idf) {
                if let Some(&f) = tf.get(t) {
                    let f = f64::from(f);
                    score +=
                        idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * f64::from(*len) / avg));
                }
            }
            if score > 0.0 {
                out.push(Ranked::new(None, *seq, score));
            }
        }
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.seq.cmp(&b.seq)));
        out.truncate(limit);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn or_semantics_and_rarer_terms_weigh_more() {
        let idx = Bm25Index::new([
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
}
