//! Search queries, with no I/O: the words of a query, as both databases' full-text search
//! reads them (`sqlite::search`, `postgres::search`).

use crate::error::StoreError;

/// Most words a search query may have (each one is a term the index must intersect).
const MAX_SEARCH_WORDS: usize = 32;

/// The words of a search query: runs of letters and digits. Both databases split text the same
/// way (FTS5 `unicode61`, PostgreSQL's parser with the `simple` configuration), so a query
/// built from these words means the same on both.
pub(crate) fn search_words(query: &str) -> Result<Vec<String>, StoreError> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return Err(StoreError::Invalid(
            "search query has no words (letters or digits)".into(),
        ));
    }
    if words.len() > MAX_SEARCH_WORDS {
        return Err(StoreError::Invalid(format!(
            "search query has {} words, over the limit of {MAX_SEARCH_WORDS}",
            words.len()
        )));
    }
    Ok(words)
}

/// The messages recall's keys name, as (conversation, seq) pairs: only the keys `query`
/// allows, a key without a conversation meaning conversation `id`, each pair once, in order.
pub(crate) fn recall_pairs(
    id: &str,
    query: &recall_core::recall::RecallQuery,
    keys: &[recall_core::recall::RecallKey],
) -> Vec<(String, i64)> {
    let mut pairs: Vec<(String, i64)> = keys
        .iter()
        .filter(|k| query.allows(k))
        .map(|k| {
            (
                k.conversation_id.clone().unwrap_or_else(|| id.to_string()),
                k.seq,
            )
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs
}
