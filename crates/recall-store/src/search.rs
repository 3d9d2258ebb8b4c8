//! Search queries, with no I/O: the words of a query, as both databases' full-text search
//! reads them (`sqlite::search`, `postgres::search`).

use crate::error::StoreError;
use crate::fork_plan::{owner, Segment};

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
/// allows, a key without a conversation meaning the message at that seq of the history
/// `segs` (a fork's prefix is its parent's rows), each pair once, in order.
pub(crate) fn recall_pairs(
    segs: &[Segment],
    query: &recall_core::recall::RecallQuery,
    keys: &[recall_core::recall::RecallKey],
) -> Vec<(String, i64)> {
    let mut pairs: Vec<(String, i64)> = keys
        .iter()
        .filter(|k| query.allows(k))
        .filter_map(|k| match &k.conversation_id {
            Some(c) => Some((c.clone(), k.seq)),
            None => owner(segs, k.seq).map(|s| (s.id.clone(), k.seq)),
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs
}

/// How recall names message `seq` of conversation `conv`: no conversation when it is part of
/// the history `segs` (then `seq` is its place there), else `conv`.
pub(crate) fn recall_key_conversation(segs: &[Segment], conv: &str, seq: i64) -> Option<String> {
    match owner(segs, seq) {
        Some(s) if s.id == conv => None,
        _ => Some(conv.to_string()),
    }
}

/// Tenant-scope hits seen from the history `segs`: a message of the history (a fork's parent's
/// prefix comes back under the parent's id) is named as one, and left out when the window
/// holds it.
pub(crate) fn tenant_hits_in_history(
    segs: &[Segment],
    query: &recall_core::recall::RecallQuery,
    hits: Vec<recall_core::recall::Ranked>,
) -> Vec<recall_core::recall::Ranked> {
    hits.into_iter()
        .filter_map(|mut h| {
            if let Some(c) = &h.conversation_id {
                h.conversation_id = recall_key_conversation(segs, c, h.seq);
            }
            (h.conversation_id.is_some() || h.seq < query.before).then_some(h)
        })
        .collect()
}
