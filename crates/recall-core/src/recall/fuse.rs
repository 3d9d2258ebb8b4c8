//! Reciprocal rank fusion: several ranked lists (lexical, semantic) into one. Each entry
//! scores `Σ 1 / (k + rank)` over the lists it is in (rank from 1), so an entry near the top
//! of both beats one at the top of a single list, and no list's raw scores need to be
//! comparable with another's.

use std::collections::HashMap;

use super::{best_first, Ranked, RecallKey};

/// The usual constant of reciprocal rank fusion (Cormack et al., 2009).
pub const RRF_K: f64 = 20.0;

/// Fuses ranked lists (each best first) into one, best first; ties keep the older message
/// first. An entry listed twice in one list counts at its best rank there.
///
/// ```
/// use recall_core::recall::{reciprocal_rank_fusion, Ranked};
/// let lexical = vec![Ranked::new(None, 7, 3.2), Ranked::new(None, 2, 1.0)];
/// let semantic = vec![Ranked::new(None, 2, 0.9), Ranked::new(None, 9, 0.8)];
/// let fused = reciprocal_rank_fusion(&[lexical, semantic]);
/// let seqs: Vec<i64> = fused.iter().map(|r| r.seq).collect();
/// assert_eq!(seqs, [2, 7, 9]);
/// ```
pub fn reciprocal_rank_fusion(lists: &[Vec<Ranked>]) -> Vec<Ranked> {
    let mut scores: HashMap<RecallKey, f64> = HashMap::new();
    for list in lists {
        let mut seen = std::collections::HashSet::new();
        for (i, r) in list.iter().enumerate() {
            let key = r.key();
            if seen.insert(key.clone()) {
                *scores.entry(key).or_default() += 1.0 / (RRF_K + (i + 1) as f64);
            }
        }
    }
    let mut out: Vec<Ranked> = scores
        .into_iter()
        .map(|(k, s)| Ranked::new(k.conversation_id, k.seq, s))
        .collect();
    best_first(&mut out);
    out
}
