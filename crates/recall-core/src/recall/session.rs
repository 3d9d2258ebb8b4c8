//! Sessions as units of ranking: a conversation's messages fall into sessions separated by
//! gaps of hours, and a hit in a session that holds other good hits is worth more than one
//! alone. Each hit's score becomes [`TURN_SHARE`] of its own plus the rest of its session's,
//! the mean of the session's [`SESSION_BEST`] best hit scores (a session scored by its best
//! turns, not by all of them: a long session is not better for being long). Measured on
//! LoCoMo (docs/BENCHMARKS.md, "The method study"): +1.5 / +1.7 / +0.8 points at 2,000 /
//! 4,000 / 8,000 tokens with MiniLM together with 60 hits a query.

use std::collections::HashMap;

use super::{best_first, Ranked, RecallKey};

/// A gap between two hits of one conversation longer than this (two hours, in milliseconds)
/// puts them in different sessions. Hits are clustered by their messages' times alone: two
/// hits closer than this are in one session.
pub const SESSION_GAP_MS: i64 = 2 * 60 * 60 * 1000;
/// The share of a hit's score that is its own; the rest is its session's.
pub const TURN_SHARE: f64 = 0.7;
/// A session scores the mean of this many of its best hit scores (fewer hits count as zero).
pub const SESSION_BEST: usize = 2;

/// `hits` (best first) scored with their sessions' and sorted again, best first, ties to the
/// older message. `at` gives a hit's time (milliseconds since the Unix epoch); a hit with no
/// time is a session of its own. When no two hits share a session, the order and the scores
/// are those given.
///
/// ```
/// use recall_core::recall::{score_by_session, Ranked};
/// let hour = 3_600_000;
/// // Seq 1 alone in the morning; seqs 7 and 8 together in the evening.
/// let at = |seq: i64| Some(if seq == 1 { 0 } else { 10 * hour + seq });
/// let hits = [(1, 1.0), (7, 0.9), (8, 0.8)].map(|(s, v)| Ranked::new(None, s, v));
/// let ranked = score_by_session(&hits, |k| at(k.seq));
/// let seqs: Vec<i64> = ranked.iter().map(|r| r.seq).collect();
/// assert_eq!(seqs, [7, 1, 8]);
/// ```
pub fn score_by_session(
    hits: &[Ranked],
    mut at: impl FnMut(&RecallKey) -> Option<i64>,
) -> Vec<Ranked> {
    // Each conversation's timed hits in time order; a new session where the gap is too long.
    let mut timed: Vec<(Option<String>, i64, usize)> = Vec::with_capacity(hits.len());
    let mut session_of: Vec<usize> = vec![usize::MAX; hits.len()];
    for (i, h) in hits.iter().enumerate() {
        if let Some(t) = at(&h.key()) {
            timed.push((h.conversation_id.clone(), t, i));
        }
    }
    timed.sort();
    let mut next = 0;
    let mut prev: Option<(&Option<String>, i64)> = None;
    for (conv, t, i) in &timed {
        let same = prev.is_some_and(|(c, p)| c == conv && t - p <= SESSION_GAP_MS);
        if !same {
            next += 1;
        }
        session_of[*i] = next - 1;
        prev = Some((conv, *t));
    }
    for s in session_of.iter_mut().filter(|s| **s == usize::MAX) {
        *s = next;
        next += 1;
    }
    let mut sizes = vec![0usize; next];
    for &s in &session_of {
        sizes[s] += 1;
    }
    if sizes.iter().all(|&n| n <= 1) {
        return hits.to_vec();
    }
    // Each session's best scores.
    let mut best: HashMap<usize, Vec<f64>> = HashMap::new();
    for (h, &s) in hits.iter().zip(&session_of) {
        best.entry(s).or_default().push(h.score);
    }
    let session_score: HashMap<usize, f64> = best
        .into_iter()
        .map(|(s, mut scores)| {
            scores.sort_by(|a, b| b.total_cmp(a));
            let sum: f64 = scores.iter().take(SESSION_BEST).sum();
            (s, sum / SESSION_BEST as f64)
        })
        .collect();
    let mut out: Vec<Ranked> = hits
        .iter()
        .zip(&session_of)
        .map(|(h, s)| {
            let score = TURN_SHARE * h.score + (1.0 - TURN_SHARE) * session_score[s];
            Ranked::new(h.conversation_id.clone(), h.seq, score)
        })
        .collect();
    best_first(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    #[test]
    fn hits_without_times_or_alone_keep_their_order_and_scores() {
        let hits = vec![
            Ranked::new(None, 5, 0.3),
            Ranked::new(None, 2, 0.2),
            Ranked::new(None, 9, 0.1),
        ];
        assert_eq!(score_by_session(&hits, |_| None), hits);
        // Days apart: three sessions of one hit each.
        assert_eq!(score_by_session(&hits, |k| Some(k.seq * 24 * HOUR)), hits);
    }

    #[test]
    fn a_session_is_scored_by_its_best_two_hits() {
        // Seqs 1-3 one session (minutes apart), seq 20 alone a day later.
        let at = |k: &RecallKey| {
            Some(if k.seq == 20 {
                30 * HOUR
            } else {
                k.seq * 60_000
            })
        };
        let hits = vec![
            Ranked::new(None, 20, 1.0),
            Ranked::new(None, 1, 0.9),
            Ranked::new(None, 2, 0.8),
            Ranked::new(None, 3, 0.1),
        ];
        let out = score_by_session(&hits, at);
        let score = |seq| out.iter().find(|r| r.seq == seq).unwrap().score;
        // The session of 1-3 scores (0.9 + 0.8) / 2; seq 20's its own 1.0 / 2.
        assert!((score(1) - (0.7 * 0.9 + 0.3 * 0.85)).abs() < 1e-12);
        assert!((score(20) - (0.7 * 1.0 + 0.3 * 0.5)).abs() < 1e-12);
        assert!((score(3) - (0.7 * 0.1 + 0.3 * 0.85)).abs() < 1e-12);
        let seqs: Vec<i64> = out.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [1, 20, 2, 3]);
    }

    #[test]
    fn sessions_never_span_conversations_and_a_gap_splits_them() {
        let hits = vec![
            Ranked::new(Some("a".into()), 1, 0.5),
            Ranked::new(Some("b".into()), 1, 0.5),
            Ranked::new(Some("a".into()), 2, 0.4),
        ];
        // Same times in two conversations: only a's two hits share a session.
        let out = score_by_session(&hits, |k| Some(k.seq));
        let b = out
            .iter()
            .find(|r| r.conversation_id.as_deref() == Some("b"))
            .unwrap();
        assert!((b.score - (0.7 * 0.5 + 0.3 * 0.25)).abs() < 1e-12);
        // A gap just over the limit splits a's hits: every hit alone, nothing changes.
        let split = score_by_session(&hits, |k| Some(k.seq * (SESSION_GAP_MS + 1)));
        assert_eq!(split, hits);
    }
}
