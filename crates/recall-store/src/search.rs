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
