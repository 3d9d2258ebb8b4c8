//! Query terms: the content words of a query, as both the in-memory BM25 and the stores'
//! full-text indexes read them (runs of letters and digits, lower-cased).

use std::collections::HashSet;

/// Most terms a recall query keeps (the first ones, in query order): each is a term an index
/// must look up, and a long message says what it is about well before its 32nd word.
pub const MAX_TERMS: usize = 32;

/// The longest word that is a term, in bytes: a longer one (an identifier, a hash, base64)
/// is left out of queries and of the index rather than stored as a key.
pub const MAX_TERM_BYTES: usize = 64;

/// Words too common to say what a message is about. Matching on them would rank by length and
/// luck; both stores would also pay for their long posting lists.
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "me",
    "might",
    "more",
    "most",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The words of `text`: runs of letters and digits, lower-cased, in order (duplicates kept).
/// The same split as FTS5's `unicode61` tokenizer and PostgreSQL's `simple` configuration.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// True for a stop word (given lower-cased).
pub fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

/// The index form of a word (given lower-cased, not a stop word): its English Snowball stem,
/// so that "painted", "paints" and "painting" are one term of the lexical ranking.
///
/// ```
/// use recall_core::recall::stem;
/// assert_eq!(stem("painting"), "paint");
/// assert_eq!(stem("painted"), stem("paints"));
/// ```
pub fn stem(word: &str) -> String {
    thread_local! {
        static STEMMER: rust_stemmers::Stemmer =
            rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    }
    STEMMER.with(|s| s.stem(word).into_owned())
}

/// The index terms of query terms ([`query_terms`]): their stems ([`stem`]), each once, in
/// the order they first appear. What the lexical ranking looks up.
///
/// ```
/// use recall_core::recall::{query_terms, stems};
/// assert_eq!(stems(&query_terms("paint the painting")), ["paint"]);
/// ```
pub fn stems(terms: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    terms
        .iter()
        .map(|t| stem(t))
        .filter(|s| seen.insert(s.clone()))
        .collect()
}

/// The query terms of `text`: its words without stop words, punctuation and words over
/// [`MAX_TERM_BYTES`], each once, in the order they first appear, at most [`MAX_TERMS`].
///
/// ```
/// use recall_core::recall::query_terms;
/// assert_eq!(
///     query_terms("What did Alice say about the Paris trip? Paris!"),
///     ["alice", "say", "paris", "trip"]
/// );
/// assert!(query_terms("is it?").is_empty());
/// ```
pub fn query_terms(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    words(text)
        .filter(|w| w.len() <= MAX_TERM_BYTES && !is_stop_word(w))
        .filter(|w| seen.insert(w.clone()))
        .take(MAX_TERMS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn unicode_words_and_limit() {
        assert_eq!(query_terms("Ça va, ÉTÉ 2024?"), ["ça", "va", "été", "2024"]);
        let long: String = (0..50).map(|i| format!("w{i} ")).collect();
        assert_eq!(query_terms(&long).len(), MAX_TERMS);
    }
}
